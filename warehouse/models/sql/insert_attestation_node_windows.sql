-- Run by warehouse/models/attestation_coverage.py (_INSERT_WINDOWS).
INSERT INTO marts.attestation_node_windows
SELECT
    $cluster,
    w.node_name,
    w.boot_id,
    w.evidence,
    CAST(d.day_start AS DATE),
    greatest(w.s, d.day_start),
    least(w.e, d.day_start + INTERVAL 1 DAY),
    (epoch_us(least(w.e, d.day_start + INTERVAL 1 DAY)) - epoch_us(greatest(w.s, d.day_start)))
        / 1e6,
    $now
FROM (
    SELECT node_name, boot_id, 'gpu_' || tier AS evidence, s, e FROM cov_gpu_windows
    UNION ALL
    SELECT node_name, boot_id, 'cpu_verified', s, e FROM cov_cpu_windows
    UNION ALL
    SELECT node_name, boot_id, 'verified', s, e FROM cov_verified
) AS w
JOIN cov_days AS d ON w.s < d.day_start + INTERVAL 1 DAY AND w.e > d.day_start
