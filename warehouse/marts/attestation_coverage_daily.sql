-- marts.attestation_coverage_daily: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.attestation_coverage_daily AS
SELECT
    cluster,
    day,
    count(DISTINCT node_name) AS nodes,
    sum(allocated_gpu_hours) AS allocated_gpu_hours,
    sum(verified_gpu_hours) AS verified_gpu_hours,
    sum(self_reported_gpu_hours) AS self_reported_gpu_hours,
    sum(unattested_gpu_hours) AS unattested_gpu_hours,
    sum(unknown_gpu_hours) AS unknown_gpu_hours,
    sum(verified_gpu_hours) / nullif(sum(allocated_gpu_hours) - sum(unknown_gpu_hours), 0)
        AS verified_share,
    sum(unknown_gpu_hours) / nullif(sum(allocated_gpu_hours), 0) AS unknown_share
FROM marts.attestation_gpu_hours
GROUP BY cluster, day;

COMMENT ON VIEW marts.attestation_coverage_daily IS
    'Attestation coverage per cluster and UTC day: marts.attestation_gpu_hours summed (verified + self_reported + unattested + unknown = allocated GPU-hours).';
COMMENT ON COLUMN marts.attestation_coverage_daily.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_coverage_daily.day IS
    'UTC date.';
COMMENT ON COLUMN marts.attestation_coverage_daily.nodes IS
    'Nodes with workload GPU holdings in the day.';
COMMENT ON COLUMN marts.attestation_coverage_daily.allocated_gpu_hours IS
    'Workload GPU-hours held.';
COMMENT ON COLUMN marts.attestation_coverage_daily.verified_gpu_hours IS
    'Of those, on verified nodes (GPU and CVM attested, same boot).';
COMMENT ON COLUMN marts.attestation_coverage_daily.self_reported_gpu_hours IS
    'Covered by self-reported evidence only.';
COMMENT ON COLUMN marts.attestation_coverage_daily.unattested_gpu_hours IS
    'On known GPU nodes without covering evidence.';
COMMENT ON COLUMN marts.attestation_coverage_daily.unknown_gpu_hours IS
    'On nodes the inventory did not know (with GPU capacity) at the time.';
COMMENT ON COLUMN marts.attestation_coverage_daily.verified_share IS
    'verified / (allocated − unknown): the attestation coverage of the GPU-hours that can be judged; NULL when none can.';
COMMENT ON COLUMN marts.attestation_coverage_daily.unknown_share IS
    'unknown / allocated: how much could not be judged.';
