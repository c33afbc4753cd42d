-- GPU-microseconds per category (exact integers), then hours; unknown is what is left.
-- Run by warehouse/models/attestation_coverage.py (_INSERT_HOURS).
INSERT INTO marts.attestation_gpu_hours
WITH covered AS (
    SELECT
        h.piece,
        sum(h.gpus * (epoch_us(least(h.e, st.e)) - epoch_us(greatest(h.s, st.s))))
            FILTER (WHERE st.category = 'verified') AS verified_us,
        sum(h.gpus * (epoch_us(least(h.e, st.e)) - epoch_us(greatest(h.s, st.s))))
            FILTER (WHERE st.category = 'self_reported') AS self_reported_us,
        sum(h.gpus * (epoch_us(least(h.e, st.e)) - epoch_us(greatest(h.s, st.s))))
            FILTER (WHERE st.category = 'unattested') AS unattested_us
    FROM cov_holdings AS h
    JOIN cov_states AS st ON st.node_name = h.node_name AND st.s < h.e AND h.s < st.e
    GROUP BY h.piece
),
pieces AS (
    SELECT
        h.day,
        h.node_name,
        h.namespace,
        h.job_name,
        h.gpus * (epoch_us(h.e) - epoch_us(h.s)) AS allocated_us,
        coalesce(c.verified_us, 0) AS verified_us,
        coalesce(c.self_reported_us, 0) AS self_reported_us,
        coalesce(c.unattested_us, 0) AS unattested_us
    FROM cov_holdings AS h
    LEFT JOIN covered AS c ON c.piece = h.piece
)
SELECT
    $cluster,
    day,
    node_name,
    namespace,
    job_name,
    NULL,
    sum(allocated_us) / 3.6e9,
    sum(verified_us) / 3.6e9,
    sum(self_reported_us) / 3.6e9,
    sum(unattested_us) / 3.6e9,
    (sum(allocated_us) - sum(verified_us) - sum(self_reported_us) - sum(unattested_us)) / 3.6e9,
    $now
FROM pieces
GROUP BY day, node_name, namespace, job_name
