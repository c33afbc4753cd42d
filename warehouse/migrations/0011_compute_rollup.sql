-- 0011 the telemetry of each pod's GPUs per day: marts.gpu_hourly summed per (cluster,
-- namespace, pod, node, UTC day), so refresh_compute (warehouse/models/compute.py) joins a
-- training Job's pods to about 200 times fewer rows than the GPU-hours themselves (issue 7's
-- benchmark: a 7,500-node month is 43.2 million GPU-hours, 225,000 pod-node-days; per GPU it
-- would be 1.8 million rows, and that string join cost more than the rest of the refresh).
-- refresh_gpu_hourly (warehouse/models/utilisation.py) rebuilds the days of the hours it
-- rebuilds, in the same transaction; this migration fills it from the GPU-hours already there.
-- first_hour and last_hour keep the hour range of each row: a row wholly inside an allocation's
-- hours counts whole, one that straddles its start or end (a pod name reused on the same node
-- the same day) is re-read hour by hour, so a reused name is never counted twice.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE marts.gpu_pod_daily (
    cluster VARCHAR NOT NULL,
    day DATE NOT NULL,
    workload_namespace VARCHAR NOT NULL,
    workload_pod VARCHAR NOT NULL,
    node_name VARCHAR NOT NULL,
    gpu_uuids VARCHAR[] NOT NULL,
    first_hour TIMESTAMP NOT NULL,
    last_hour TIMESTAMP NOT NULL,
    gpu_hour_rows BIGINT NOT NULL,
    labelled_gpu_hours DOUBLE,
    tensor_gpu_hours DOUBLE,
    tensor_active_gpu_hours DOUBLE,
    busy_gpu_hours DOUBLE,
    busy_active_gpu_hours DOUBLE,
    energy_gpu_hours DOUBLE,
    energy_joules DOUBLE,
    refreshed_at TIMESTAMP NOT NULL
);

INSERT INTO marts.gpu_pod_daily
SELECT
    cluster,
    day,
    workload_namespace,
    workload_pod,
    node_name,
    list_sort(list_distinct(list(gpu_uuid))),
    min(hour),
    max(hour),
    count(*),
    sum(pod_label_fraction),
    sum(CASE WHEN tensor_active IS NOT NULL THEN pod_label_fraction END),
    sum(tensor_active * pod_label_fraction),
    sum(CASE WHEN busy IS NOT NULL THEN pod_label_fraction END),
    sum(busy * pod_label_fraction),
    sum(CASE WHEN coalesce(energy_joules, energy_estimated_joules) IS NOT NULL
             THEN pod_label_fraction END),
    sum(coalesce(energy_joules, energy_estimated_joules) * pod_label_fraction),
    max(refreshed_at)
FROM marts.gpu_hourly
WHERE workload_pod IS NOT NULL AND workload_namespace IS NOT NULL AND node_name IS NOT NULL
GROUP BY cluster, day, workload_namespace, workload_pod, node_name;

COMMENT ON TABLE marts.gpu_pod_daily IS
    'The DCGM telemetry of each pod''s GPUs per UTC day: marts.gpu_hourly summed per (cluster, day, workload_namespace, workload_pod, node_name) over the GPUs of the node that carried the pod label, GPU-hours without a pod label, namespace or node left out. Each sum weights a GPU-hour by its pod_label_fraction (the share of its samples that carried the pod label), so tensor_active_gpu_hours / tensor_gpu_hours is the mean tensor activity while the pod held the GPU. refresh_gpu_hourly rebuilds the days of the hours it rebuilds, in the same transaction; refresh_compute joins training Jobs'' pods to it (and re-reads marts.gpu_hourly only for a row whose first_hour..last_hour straddles an allocation''s start or end).';
COMMENT ON COLUMN marts.gpu_pod_daily.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_pod_daily.day IS 'UTC date of the GPU-hours summed (the export partition).';
COMMENT ON COLUMN marts.gpu_pod_daily.workload_namespace IS 'The namespace label of the GPU-hours (marts.gpu_hourly.workload_namespace).';
COMMENT ON COLUMN marts.gpu_pod_daily.workload_pod IS 'The pod label of the GPU-hours (marts.gpu_hourly.workload_pod): the DCGM view of who held the GPU.';
COMMENT ON COLUMN marts.gpu_pod_daily.node_name IS 'Node the GPU reported from (marts.gpu_hourly.node_name).';
COMMENT ON COLUMN marts.gpu_pod_daily.gpu_uuids IS 'The GPUs of the node whose GPU-hours carried the pod label that day (DCGM label UUID), sorted; len(gpu_uuids) counts them.';
COMMENT ON COLUMN marts.gpu_pod_daily.first_hour IS 'Start of the earliest GPU-hour summed (UTC).';
COMMENT ON COLUMN marts.gpu_pod_daily.last_hour IS 'Start of the latest GPU-hour summed (UTC): the row covers first_hour <= hour <= last_hour.';
COMMENT ON COLUMN marts.gpu_pod_daily.gpu_hour_rows IS 'Rows of marts.gpu_hourly summed (GPU-hours carrying this pod label as their main one).';
COMMENT ON COLUMN marts.gpu_pod_daily.labelled_gpu_hours IS 'Σ pod_label_fraction: GPU-hours of telemetry carrying the pod label.';
COMMENT ON COLUMN marts.gpu_pod_daily.tensor_gpu_hours IS 'Σ pod_label_fraction over GPU-hours with tensor_active: the weight of tensor_active_gpu_hours. NULL when none.';
COMMENT ON COLUMN marts.gpu_pod_daily.tensor_active_gpu_hours IS 'Σ tensor_active × pod_label_fraction: GPU-hours of tensor-pipe activity. NULL when no GPU-hour had tensor_active.';
COMMENT ON COLUMN marts.gpu_pod_daily.busy_gpu_hours IS 'Σ pod_label_fraction over GPU-hours with busy: the weight of busy_active_gpu_hours. NULL when none.';
COMMENT ON COLUMN marts.gpu_pod_daily.busy_active_gpu_hours IS 'Σ busy × pod_label_fraction: GPU-hours with a kernel resident (liveness, not efficiency). NULL when no GPU-hour had busy.';
COMMENT ON COLUMN marts.gpu_pod_daily.energy_gpu_hours IS 'Σ pod_label_fraction over GPU-hours with energy (energy_joules, else energy_estimated_joules): the GPU-hours energy_joules covers. NULL when none.';
COMMENT ON COLUMN marts.gpu_pod_daily.energy_joules IS 'Σ coalesce(energy_joules, energy_estimated_joules) × pod_label_fraction: GPU energy in joules (the counter, else power × time), on energy_gpu_hours. NULL when none.';
COMMENT ON COLUMN marts.gpu_pod_daily.refreshed_at IS 'When the row was last rebuilt (UTC; rows filled by migration 0011: the latest refreshed_at of its GPU-hours).';
