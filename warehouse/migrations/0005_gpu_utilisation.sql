-- 0005 GPU utilisation: hourly tables rebuilt incrementally from DCGM telemetry and from the
-- inventory's intervals (warehouse/models/utilisation.py: refresh_gpu_hourly), daily rollups per
-- GPU, node, namespace, node pool, failure domain and GPU model, the benchmark summary and the
-- degraded-GPU finder (reference gpu-benchmarks-telemetry.md §4 and §5.2).
-- Allocation is not utilisation is not MFU: every column says which signal it uses.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE marts.gpu_hourly (
    cluster VARCHAR NOT NULL,
    gpu_uuid VARCHAR NOT NULL,
    hour TIMESTAMP NOT NULL,
    day DATE NOT NULL,
    node_name VARCHAR,
    gpu_model VARCHAR,
    samples BIGINT NOT NULL,
    busy_signal VARCHAR,
    busy DOUBLE,
    sm_active DOUBLE,
    tensor_active DOUBLE,
    dram_active DOUBLE,
    power_watts DOUBLE,
    power_covered_seconds DOUBLE,
    energy_joules DOUBLE,
    energy_estimated_joules DOUBLE,
    max_gpu_temp_c DOUBLE,
    mean_sm_clock_mhz DOUBLE,
    xid_last INTEGER,
    xid_samples BIGINT,
    uncorrectable_remapped_rows_max BIGINT,
    correctable_remapped_rows_max BIGINT,
    row_remap_failure_max BIGINT,
    workload_pod VARCHAR,
    workload_namespace VARCHAR,
    pod_label_fraction DOUBLE,
    pod_category VARCHAR,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.gpu_hourly IS
    'DCGM telemetry rolled up per GPU and hour: one row per (cluster, gpu_uuid, hour) with samples of the metrics below in that hour (all of the GPU''s series, MIG instances included). A table, not a view: refresh_gpu_hourly (warehouse/models/utilisation.py) rebuilds only the hours of telemetry loads not yet rolled up (audit.telemetry_loads.rolled_up), and the hour after each when already built (its first energy increase starts in the load). Telemetry only: busy is engine activity (liveness), not allocation and not MFU.';
COMMENT ON COLUMN marts.gpu_hourly.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hourly.gpu_uuid IS 'GPU UUID (DCGM label UUID; joins core.gpu_benchmarks.gpu_uuid).';
COMMENT ON COLUMN marts.gpu_hourly.hour IS 'Start of the hour (UTC); the row covers samples with hour <= ts < hour + 1 h.';
COMMENT ON COLUMN marts.gpu_hourly.day IS 'UTC date of hour (the export partition).';
COMMENT ON COLUMN marts.gpu_hourly.node_name IS 'Node the GPU reported from: the hostname label of its series with the most samples in the hour (the exporter''s Hostname/hostname, normally the Kubernetes node name).';
COMMENT ON COLUMN marts.gpu_hourly.gpu_model IS 'GPU product name (DCGM label modelName) of its series with the most samples in the hour.';
COMMENT ON COLUMN marts.gpu_hourly.samples IS 'Samples behind busy (of the busy_signal metric; every MIG instance''s samples count); 0 when the GPU reported neither gr_engine_active nor gpu_util in the hour.';
COMMENT ON COLUMN marts.gpu_hourly.busy_signal IS 'Which metric busy is the mean of: gr_engine_active (DCGM_FI_PROF_GR_ENGINE_ACTIVE) when the GPU reported it in the hour, else gpu_util (DCGM_FI_DEV_GPU_UTIL / 100); NULL when neither.';
COMMENT ON COLUMN marts.gpu_hourly.busy IS 'Mean of busy_signal''s samples in the hour (ratio 0-1): the share of time a kernel was resident. A liveness signal that overstates use (one resident thread reads as busy); efficiency is sm_active, tensor_active, dram_active and benchmark TFLOP/s.';
COMMENT ON COLUMN marts.gpu_hourly.sm_active IS 'Mean of sm_active (DCGM_FI_PROF_SM_ACTIVE) samples in the hour, ratio 0-1: the share of cycles an SM had a warp, averaged over SMs. NULL when the exporter does not collect it (not in dcgm-exporter''s default set).';
COMMENT ON COLUMN marts.gpu_hourly.tensor_active IS 'Mean of tensor_active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) samples in the hour, ratio 0-1. NULL when not collected.';
COMMENT ON COLUMN marts.gpu_hourly.dram_active IS 'Mean of dram_active (DCGM_FI_PROF_DRAM_ACTIVE) samples in the hour, ratio 0-1: the share of cycles the HBM interface was busy. NULL when not collected.';
COMMENT ON COLUMN marts.gpu_hourly.power_watts IS 'Mean of power_usage (DCGM_FI_DEV_POWER_USAGE) samples in the hour, watts.';
COMMENT ON COLUMN marts.gpu_hourly.power_covered_seconds IS 'Seconds of the hour the power samples cover: (last − first sample time) · n / (n − 1) for n >= 2 samples (n sampling intervals), at most 3600; NULL with fewer than 2 samples.';
COMMENT ON COLUMN marts.gpu_hourly.energy_joules IS 'Energy from the total_energy_consumption counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, joules): the sum over consecutive samples of the GPU (across its series, in time order) whose later sample falls in the hour and that are at most 1 h apart, of the increase: later − earlier, or the later value itself when it is lower (the driver reloaded and the counter restarted from 0). NULL when the GPU has no such pair in the hour (no counter).';
COMMENT ON COLUMN marts.gpu_hourly.energy_estimated_joules IS 'power_watts × power_covered_seconds: the energy estimated from the power gauge, the fallback where energy_joules is NULL (and a cross-check where it is not).';
COMMENT ON COLUMN marts.gpu_hourly.max_gpu_temp_c IS 'Highest gpu_temp (DCGM_FI_DEV_GPU_TEMP) sample in the hour, degrees Celsius.';
COMMENT ON COLUMN marts.gpu_hourly.mean_sm_clock_mhz IS 'Mean of sm_clock (DCGM_FI_DEV_SM_CLOCK) samples in the hour, MHz. Low against same-model GPUs under the same load: throttling.';
COMMENT ON COLUMN marts.gpu_hourly.xid_last IS 'Last non-zero xid_errors sample in the hour (DCGM_FI_DEV_XID_ERRORS is a gauge holding the code of the LAST XID, e.g. 13, 31, 48, 79; not a count); NULL when every sample was 0.';
COMMENT ON COLUMN marts.gpu_hourly.xid_samples IS 'xid_errors samples in the hour that were non-zero (an XID code was showing), not the number of XID events; NULL when the GPU reported no xid_errors in the hour.';
COMMENT ON COLUMN marts.gpu_hourly.uncorrectable_remapped_rows_max IS 'Highest uncorrectable_remapped_rows sample in the hour (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, count).';
COMMENT ON COLUMN marts.gpu_hourly.correctable_remapped_rows_max IS 'Highest correctable_remapped_rows sample in the hour (DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, count).';
COMMENT ON COLUMN marts.gpu_hourly.row_remap_failure_max IS 'Highest row_remap_failure sample in the hour (DCGM_FI_DEV_ROW_REMAP_FAILURE; 1 = a row remap failed, replace the GPU).';
COMMENT ON COLUMN marts.gpu_hourly.workload_pod IS 'The pod label (pod, or exported_pod through a Service) carried by the most samples of the GPU in the hour, all metrics counted (ties: the greater name); NULL when no sample carried one. The DCGM view of who held the GPU, not the inventory''s.';
COMMENT ON COLUMN marts.gpu_hourly.workload_namespace IS 'Namespace label of that pod (the team).';
COMMENT ON COLUMN marts.gpu_hourly.pod_label_fraction IS 'Share of the GPU''s samples in the hour (all metrics) whose series carried a pod label: the DCGM allocation proxy, in hours of this GPU-hour (0-1). The exporter sometimes omits the labels; the inventory''s intervals (marts.node_gpu_hours) are the allocation of record.';
COMMENT ON COLUMN marts.gpu_hourly.pod_category IS 'balloon when workload_pod is a balloon (placeholder) pod by the inventory (core.gpu_allocations of that namespace and pod name, category balloon, overlapping the hour, as of the last refresh of the hour), else workload; NULL when workload_pod is NULL. Balloons reserve capacity: they are never counted as idle.';
COMMENT ON COLUMN marts.gpu_hourly.refreshed_at IS 'When refresh_gpu_hourly last rebuilt this row (UTC).';

CREATE TABLE marts.node_gpu_hours (
    cluster VARCHAR NOT NULL,
    node_name VARCHAR,
    hour TIMESTAMP NOT NULL,
    day DATE NOT NULL,
    node_uid VARCHAR,
    pool VARCHAR,
    gpu_product VARCHAR,
    failure_domain VARCHAR,
    observed_hours DOUBLE NOT NULL,
    capacity_gpu_hours DOUBLE NOT NULL,
    allocatable_gpu_hours DOUBLE NOT NULL,
    allocated_workload_gpu_hours DOUBLE NOT NULL,
    allocated_balloon_gpu_hours DOUBLE NOT NULL,
    free_gpu_hours DOUBLE NOT NULL,
    unavailable_gpu_hours DOUBLE NOT NULL,
    allocated_beyond_allocatable_gpu_hours DOUBLE NOT NULL,
    telemetry_gpu_hours BIGINT NOT NULL,
    dcgm_allocated_gpu_hours DOUBLE NOT NULL,
    allocated_idle_gpu_hours DOUBLE NOT NULL,
    busy_gpu_hours DOUBLE NOT NULL,
    busy_observed_gpu_hours BIGINT NOT NULL,
    sm_active_gpu_hours DOUBLE NOT NULL,
    sm_active_observed_gpu_hours BIGINT NOT NULL,
    tensor_active_gpu_hours DOUBLE NOT NULL,
    tensor_active_observed_gpu_hours BIGINT NOT NULL,
    dram_active_gpu_hours DOUBLE NOT NULL,
    dram_active_observed_gpu_hours BIGINT NOT NULL,
    energy_joules DOUBLE NOT NULL,
    energy_estimated_joules DOUBLE NOT NULL,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.node_gpu_hours IS
    'Whole GPUs per node and hour: capacity split by the inventory into allocated_workload + allocated_balloon + free + unavailable GPU-hours (the rules of marts.node_gpu_capacity, integrated over the hour), beside the DCGM telemetry of the node''s GPUs (marts.gpu_hourly, by hostname). One row per (cluster, node_name, hour) the inventory observed (a node version of core.nodes valid in the hour, up to the cluster''s latest successful kubernetes collection) or telemetry reported. A table, not a view (a year of 7,500 nodes is 66 million node-hours, too slow to derive per query): refresh_gpu_hourly rebuilds the hours of new telemetry loads and of new kubernetes collections. Whole GPUs only: nvidia.com/gpu on nodes whose MIG strategy is not single; MIG slices are not GPU-hours. Hourly rollups per pool, failure domain or model: GROUP BY those columns.';
COMMENT ON COLUMN marts.node_gpu_hours.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.node_gpu_hours.node_name IS 'metadata.name of the node (= the DCGM hostname label); NULL only for telemetry without a hostname label.';
COMMENT ON COLUMN marts.node_gpu_hours.hour IS 'Start of the hour (UTC).';
COMMENT ON COLUMN marts.node_gpu_hours.day IS 'UTC date of hour.';
COMMENT ON COLUMN marts.node_gpu_hours.node_uid IS 'metadata.uid of the node''s latest version in the hour (the one valid at its end, or when the node left); NULL for telemetry-only rows.';
COMMENT ON COLUMN marts.node_gpu_hours.pool IS 'Node pool (core.nodes.pool) of that version; NULL when unlabelled or telemetry-only.';
COMMENT ON COLUMN marts.node_gpu_hours.gpu_product IS 'GPU model (GFD nvidia.com/gpu.product) of that version; for telemetry-only rows the DCGM modelName of the node''s GPUs.';
COMMENT ON COLUMN marts.node_gpu_hours.failure_domain IS 'Top-level failure domain of that version (core.nodes.topology, the level-1 domain, e.g. the region or zone; unknown when the node lacks the label); NULL for telemetry-only rows.';
COMMENT ON COLUMN marts.node_gpu_hours.observed_hours IS 'Share of the hour (0-1) the inventory observed the node with whole GPUs: the overlap of its core.nodes versions (valid_from to valid_to, open versions up to the latest kubernetes collection) with the hour. Below 1 in the hour a node appeared or left and in the hour of the latest collection (rebuilt by the next one); 0 for telemetry-only rows.';
COMMENT ON COLUMN marts.node_gpu_hours.capacity_gpu_hours IS 'Σ over the node versions in the hour of status.capacity of nvidia.com/gpu × the hours the version was valid in it (fractional at the edges). = allocated_workload + allocated_balloon + free + unavailable.';
COMMENT ON COLUMN marts.node_gpu_hours.allocatable_gpu_hours IS 'The same with status.allocatable (healthy devices).';
COMMENT ON COLUMN marts.node_gpu_hours.allocated_workload_gpu_hours IS 'Inventory allocation of record: Σ over core.gpu_allocations (nvidia.com/gpu, category workload) on the node of gpus × the overlap of the interval (open intervals up to the latest kubernetes collection) with the node version''s time in the hour, exact to the microsecond.';
COMMENT ON COLUMN marts.node_gpu_hours.allocated_balloon_gpu_hours IS 'The same for balloon (placeholder) pods: reserved capacity, never idle, never free.';
COMMENT ON COLUMN marts.node_gpu_hours.free_gpu_hours IS 'Per node version in the hour: allocatable − allocated GPU-hours (never below 0) when the version is Ready and not cordoned, else 0; summed.';
COMMENT ON COLUMN marts.node_gpu_hours.unavailable_gpu_hours IS 'Per node version in the hour: capacity − max(allocatable, allocated) GPU-hours (unhealthy devices), plus allocatable − allocated (never below 0) when the version is NotReady or cordoned; summed.';
COMMENT ON COLUMN marts.node_gpu_hours.allocated_beyond_allocatable_gpu_hours IS 'Per node version: allocated − allocatable GPU-hours when positive (devices went unhealthy under running pods); 0 normally. The bucket rules apply to the version''s GPU-hours in the hour, which equals applying them at every instant while allocation stays within allocatable.';
COMMENT ON COLUMN marts.node_gpu_hours.telemetry_gpu_hours IS 'GPUs of the node with DCGM samples in the hour (marts.gpu_hourly rows whose node_name is this node; each counts one GPU-hour however many samples it had).';
COMMENT ON COLUMN marts.node_gpu_hours.dcgm_allocated_gpu_hours IS 'DCGM allocation proxy: Σ pod_label_fraction of the node''s GPU-hours whose pod_category is workload (balloon pods excluded). Compare with allocated_workload_gpu_hours (the inventory).';
COMMENT ON COLUMN marts.node_gpu_hours.allocated_idle_gpu_hours IS 'Allocated but idle: Σ pod_label_fraction of the node''s GPU-hours whose pod_category is workload and whose busy < 0.05 (engine active under 5 % of the hour). Which GPU a pod holds is known only from the DCGM pod label, so this uses the DCGM proxy.';
COMMENT ON COLUMN marts.node_gpu_hours.busy_gpu_hours IS 'Σ busy of the node''s GPU-hours: engine-active GPU-hours (busy_signal per GPU). Mean busy = busy_gpu_hours / busy_observed_gpu_hours.';
COMMENT ON COLUMN marts.node_gpu_hours.busy_observed_gpu_hours IS 'The node''s GPU-hours with a busy value.';
COMMENT ON COLUMN marts.node_gpu_hours.sm_active_gpu_hours IS 'Σ sm_active of the node''s GPU-hours (SM-active GPU-hours).';
COMMENT ON COLUMN marts.node_gpu_hours.sm_active_observed_gpu_hours IS 'The node''s GPU-hours with an sm_active value.';
COMMENT ON COLUMN marts.node_gpu_hours.tensor_active_gpu_hours IS 'Σ tensor_active of the node''s GPU-hours (tensor-pipe-active GPU-hours).';
COMMENT ON COLUMN marts.node_gpu_hours.tensor_active_observed_gpu_hours IS 'The node''s GPU-hours with a tensor_active value.';
COMMENT ON COLUMN marts.node_gpu_hours.dram_active_gpu_hours IS 'Σ dram_active of the node''s GPU-hours (HBM-active GPU-hours).';
COMMENT ON COLUMN marts.node_gpu_hours.dram_active_observed_gpu_hours IS 'The node''s GPU-hours with a dram_active value.';
COMMENT ON COLUMN marts.node_gpu_hours.energy_joules IS 'Σ over the node''s GPU-hours of energy_joules (the counter), or energy_estimated_joules (power × time) where the counter gave none. Telemetry only: GPUs without DCGM samples add nothing.';
COMMENT ON COLUMN marts.node_gpu_hours.energy_estimated_joules IS 'The part of energy_joules that came from the power-gauge estimate.';
COMMENT ON COLUMN marts.node_gpu_hours.refreshed_at IS 'When refresh_gpu_hourly last rebuilt this row (UTC).';

CREATE TABLE marts.namespace_gpu_hours (
    cluster VARCHAR NOT NULL,
    namespace VARCHAR,
    hour TIMESTAMP NOT NULL,
    day DATE NOT NULL,
    allocated_workload_gpu_hours DOUBLE NOT NULL,
    allocated_balloon_gpu_hours DOUBLE NOT NULL,
    dcgm_allocated_gpu_hours DOUBLE NOT NULL,
    allocated_idle_gpu_hours DOUBLE NOT NULL,
    busy_gpu_hours DOUBLE NOT NULL,
    busy_observed_gpu_hours DOUBLE NOT NULL,
    sm_active_gpu_hours DOUBLE NOT NULL,
    sm_active_observed_gpu_hours DOUBLE NOT NULL,
    tensor_active_gpu_hours DOUBLE NOT NULL,
    tensor_active_observed_gpu_hours DOUBLE NOT NULL,
    dram_active_gpu_hours DOUBLE NOT NULL,
    dram_active_observed_gpu_hours DOUBLE NOT NULL,
    energy_joules DOUBLE NOT NULL,
    energy_estimated_joules DOUBLE NOT NULL,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.namespace_gpu_hours IS
    'Whole GPUs per namespace (team) and hour: the inventory''s allocation (core.gpu_allocations intervals, counted only on node versions of marts.node_gpu_hours, so namespaces add up to the nodes) beside the DCGM telemetry of the GPU-hours whose workload pod is in the namespace. Capacity, free and unavailable belong to nodes, not namespaces: see marts.node_gpu_hours. Rebuilt with marts.node_gpu_hours by refresh_gpu_hourly.';
COMMENT ON COLUMN marts.namespace_gpu_hours.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.namespace_gpu_hours.namespace IS 'Kubernetes namespace: the pod''s namespace in the inventory, the namespace label of gpu_hourly.workload_namespace for telemetry.';
COMMENT ON COLUMN marts.namespace_gpu_hours.hour IS 'Start of the hour (UTC).';
COMMENT ON COLUMN marts.namespace_gpu_hours.day IS 'UTC date of hour.';
COMMENT ON COLUMN marts.namespace_gpu_hours.allocated_workload_gpu_hours IS 'Inventory: Σ gpus × overlap with the hour of the namespace''s workload core.gpu_allocations (nvidia.com/gpu) on whole-GPU node versions.';
COMMENT ON COLUMN marts.namespace_gpu_hours.allocated_balloon_gpu_hours IS 'The same for its balloon (placeholder) pods.';
COMMENT ON COLUMN marts.namespace_gpu_hours.dcgm_allocated_gpu_hours IS 'DCGM proxy: Σ pod_label_fraction of the GPU-hours whose workload_namespace is this namespace and pod_category is workload.';
COMMENT ON COLUMN marts.namespace_gpu_hours.allocated_idle_gpu_hours IS 'Of those, the GPU-hours whose busy < 0.05 (engine active under 5 % of the hour): allocated but idle, by the DCGM proxy.';
COMMENT ON COLUMN marts.namespace_gpu_hours.busy_gpu_hours IS 'Σ busy × pod_label_fraction over those GPU-hours. Mean busy of the team = busy_gpu_hours / busy_observed_gpu_hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.busy_observed_gpu_hours IS 'Σ pod_label_fraction over those GPU-hours with a busy value (the weights).';
COMMENT ON COLUMN marts.namespace_gpu_hours.sm_active_gpu_hours IS 'Σ sm_active × pod_label_fraction over those GPU-hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.sm_active_observed_gpu_hours IS 'Σ pod_label_fraction over those GPU-hours with an sm_active value.';
COMMENT ON COLUMN marts.namespace_gpu_hours.tensor_active_gpu_hours IS 'Σ tensor_active × pod_label_fraction over those GPU-hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.tensor_active_observed_gpu_hours IS 'Σ pod_label_fraction over those GPU-hours with a tensor_active value.';
COMMENT ON COLUMN marts.namespace_gpu_hours.dram_active_gpu_hours IS 'Σ dram_active × pod_label_fraction over those GPU-hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.dram_active_observed_gpu_hours IS 'Σ pod_label_fraction over those GPU-hours with a dram_active value.';
COMMENT ON COLUMN marts.namespace_gpu_hours.energy_joules IS 'Σ over those GPU-hours of the GPU''s energy in the hour (counter, else power estimate) × pod_label_fraction: energy attributed to the team by the DCGM pod label.';
COMMENT ON COLUMN marts.namespace_gpu_hours.energy_estimated_joules IS 'The part of energy_joules that came from the power-gauge estimate.';
COMMENT ON COLUMN marts.namespace_gpu_hours.refreshed_at IS 'When refresh_gpu_hourly last rebuilt this row (UTC).';

CREATE TABLE audit.utilisation_refreshes (
    refreshed_at TIMESTAMP NOT NULL,
    cluster VARCHAR NOT NULL,
    telemetry_loads INTEGER NOT NULL,
    kubernetes_collections INTEGER NOT NULL,
    inventory_horizon TIMESTAMP,
    first_hour TIMESTAMP,
    last_hour TIMESTAMP,
    hours INTEGER NOT NULL,
    telemetry_hours INTEGER NOT NULL,
    gpu_hourly_rows BIGINT NOT NULL,
    node_gpu_hours_rows BIGINT NOT NULL,
    namespace_gpu_hours_rows BIGINT NOT NULL
);

COMMENT ON TABLE audit.utilisation_refreshes IS
    'One row per cluster per run of refresh_gpu_hourly that had something to do: which loads and collections it rolled up and which hours it rebuilt. Kubernetes collections newer than the cluster''s latest inventory_horizon here are the ones not yet rolled up.';
COMMENT ON COLUMN audit.utilisation_refreshes.refreshed_at IS 'When the refresh ran (UTC).';
COMMENT ON COLUMN audit.utilisation_refreshes.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.utilisation_refreshes.telemetry_loads IS 'audit.telemetry_loads rows rolled up (rolled_up set to true).';
COMMENT ON COLUMN audit.utilisation_refreshes.kubernetes_collections IS 'Successful kubernetes collections rolled up (started after the previous inventory_horizon).';
COMMENT ON COLUMN audit.utilisation_refreshes.inventory_horizon IS 'started_at of the cluster''s latest successful kubernetes collection at the refresh: open node versions and allocation intervals count up to it.';
COMMENT ON COLUMN audit.utilisation_refreshes.first_hour IS 'Earliest hour rebuilt (UTC).';
COMMENT ON COLUMN audit.utilisation_refreshes.last_hour IS 'Latest hour rebuilt (UTC).';
COMMENT ON COLUMN audit.utilisation_refreshes.hours IS 'Hours of marts.node_gpu_hours and marts.namespace_gpu_hours rebuilt.';
COMMENT ON COLUMN audit.utilisation_refreshes.telemetry_hours IS 'Of those, hours of marts.gpu_hourly rebuilt from samples.';
COMMENT ON COLUMN audit.utilisation_refreshes.gpu_hourly_rows IS 'Rows written to marts.gpu_hourly.';
COMMENT ON COLUMN audit.utilisation_refreshes.node_gpu_hours_rows IS 'Rows written to marts.node_gpu_hours.';
COMMENT ON COLUMN audit.utilisation_refreshes.namespace_gpu_hours_rows IS 'Rows written to marts.namespace_gpu_hours.';

CREATE VIEW marts.gpu_daily AS
SELECT
    cluster,
    gpu_uuid,
    day,
    arg_max(node_name, hour) AS node_name,
    arg_max(gpu_model, hour) AS gpu_model,
    count(*) AS hours_reporting,
    CAST(sum(samples) AS BIGINT) AS samples,
    avg(busy) AS busy,
    avg(sm_active) AS sm_active,
    avg(tensor_active) AS tensor_active,
    avg(dram_active) AS dram_active,
    avg(power_watts) AS power_watts,
    sum(coalesce(energy_joules, energy_estimated_joules)) AS energy_joules,
    sum(energy_estimated_joules) FILTER (WHERE energy_joules IS NULL) AS energy_estimated_joules,
    max(max_gpu_temp_c) AS max_gpu_temp_c,
    avg(mean_sm_clock_mhz) AS mean_sm_clock_mhz,
    arg_max(xid_last, hour) FILTER (WHERE xid_last IS NOT NULL) AS xid_last,
    CAST(sum(xid_samples) AS BIGINT) AS xid_samples,
    max(uncorrectable_remapped_rows_max) AS uncorrectable_remapped_rows_max,
    max(correctable_remapped_rows_max) AS correctable_remapped_rows_max,
    max(row_remap_failure_max) AS row_remap_failure_max,
    coalesce(sum(pod_label_fraction) FILTER (WHERE pod_category = 'workload'), 0)
        AS dcgm_allocated_gpu_hours,
    coalesce(sum(pod_label_fraction) FILTER (WHERE pod_category = 'workload' AND busy < 0.05), 0)
        AS allocated_idle_gpu_hours,
    arg_max(workload_namespace, (pod_label_fraction, workload_namespace))
        FILTER (WHERE workload_namespace IS NOT NULL) AS top_namespace
FROM marts.gpu_hourly
GROUP BY cluster, gpu_uuid, day;

COMMENT ON VIEW marts.gpu_daily IS
    'DCGM telemetry per GPU and UTC day, from marts.gpu_hourly. Means are means of the hourly means over the hours that have a value (each reporting hour weighs the same). Telemetry only: busy is engine activity (liveness), allocation comes from the pod labels (proxy), not MFU.';
COMMENT ON COLUMN marts.gpu_daily.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_daily.gpu_uuid IS 'GPU UUID.';
COMMENT ON COLUMN marts.gpu_daily.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_daily.node_name IS 'Node of the GPU''s latest hour of the day.';
COMMENT ON COLUMN marts.gpu_daily.gpu_model IS 'DCGM modelName of its latest hour of the day.';
COMMENT ON COLUMN marts.gpu_daily.hours_reporting IS 'Hours of the day with samples of the GPU (at most 24).';
COMMENT ON COLUMN marts.gpu_daily.samples IS 'Σ gpu_hourly.samples: samples of the busy signal.';
COMMENT ON COLUMN marts.gpu_daily.busy IS 'Mean of the hourly busy (gr_engine_active, or gpu_util without it), ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.sm_active IS 'Mean of the hourly sm_active, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.tensor_active IS 'Mean of the hourly tensor_active, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.dram_active IS 'Mean of the hourly dram_active, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.power_watts IS 'Mean of the hourly mean power, watts.';
COMMENT ON COLUMN marts.gpu_daily.energy_joules IS 'Σ over the hours of energy_joules (counter increases), or energy_estimated_joules (power × time) in hours without counter increases.';
COMMENT ON COLUMN marts.gpu_daily.energy_estimated_joules IS 'The part of energy_joules that came from the power estimate; NULL when none did.';
COMMENT ON COLUMN marts.gpu_daily.max_gpu_temp_c IS 'Highest GPU temperature sample of the day, degrees Celsius.';
COMMENT ON COLUMN marts.gpu_daily.mean_sm_clock_mhz IS 'Mean of the hourly mean SM clock, MHz.';
COMMENT ON COLUMN marts.gpu_daily.xid_last IS 'xid_last of the latest hour of the day that showed a non-zero XID code; NULL when none.';
COMMENT ON COLUMN marts.gpu_daily.xid_samples IS 'Samples of the day showing a non-zero XID code.';
COMMENT ON COLUMN marts.gpu_daily.uncorrectable_remapped_rows_max IS 'Highest uncorrectable remapped rows count of the day.';
COMMENT ON COLUMN marts.gpu_daily.correctable_remapped_rows_max IS 'Highest correctable remapped rows count of the day.';
COMMENT ON COLUMN marts.gpu_daily.row_remap_failure_max IS 'Highest row remap failure flag of the day (1 = failed).';
COMMENT ON COLUMN marts.gpu_daily.dcgm_allocated_gpu_hours IS 'Σ pod_label_fraction over the hours whose pod_category is workload: hours the GPU was held by a workload pod, by the DCGM pod-label proxy (balloons excluded).';
COMMENT ON COLUMN marts.gpu_daily.allocated_idle_gpu_hours IS 'Of those, the hours whose busy < 0.05 (engine active under 5 % of the hour): allocated but idle.';
COMMENT ON COLUMN marts.gpu_daily.top_namespace IS 'The workload_namespace with the most pod-labelled hours of the day (ties: the greater name); NULL when none.';

CREATE VIEW marts.gpu_hours_daily_by_node AS
SELECT
    cluster,
    node_name,
    day,
    arg_max(node_uid, hour) FILTER (WHERE node_uid IS NOT NULL) AS node_uid,
    arg_max(pool, hour) FILTER (WHERE observed_hours > 0) AS pool,
    arg_max(gpu_product, hour) FILTER (WHERE gpu_product IS NOT NULL) AS gpu_product,
    arg_max(failure_domain, hour) FILTER (WHERE observed_hours > 0) AS failure_domain,
    sum(observed_hours) AS observed_hours,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, node_name, day;

COMMENT ON VIEW marts.gpu_hours_daily_by_node IS
    'marts.node_gpu_hours summed per node and UTC day: inventory GPU-hours (capacity = allocated_workload + allocated_balloon + free + unavailable), the DCGM allocation proxy, allocated-but-idle GPU-hours, activity means weighted by GPU-hours and energy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.node_name IS 'Node name; NULL for telemetry without a hostname label.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.node_uid IS 'metadata.uid of the node in its latest hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.pool IS 'Node pool in its latest observed hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.gpu_product IS 'GPU model in its latest hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.failure_domain IS 'Top-level failure domain in its latest observed hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.observed_hours IS 'Hours of the day the inventory observed the node (at most 24).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.free_gpu_hours IS 'Σ free GPU-hours (allocatable, unallocated, on Ready uncordoned node versions).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.unavailable_gpu_hours IS 'Σ unavailable GPU-hours (unhealthy devices, unallocated capacity of NotReady or cordoned versions).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation (reference §4), not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value, each GPU-hour weighing the same.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.energy_mwh IS 'Σ GPU energy (counter, else power estimate) in MWh (joules / 3.6e9); GPUs only, not the host.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

CREATE VIEW marts.gpu_hours_daily_by_namespace AS
SELECT
    cluster,
    namespace,
    day,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.namespace_gpu_hours
GROUP BY cluster, namespace, day;

COMMENT ON VIEW marts.gpu_hours_daily_by_namespace IS
    'Per namespace (team = namespace) and UTC day, from marts.namespace_gpu_hours: GPU-hours allocated by the inventory (workload, balloon), the DCGM pod-label proxy, allocated-but-idle GPU-hours, activity means weighted by the team''s GPU-hours and attributed energy. Capacity, free and unavailable are per node (marts.gpu_hours_daily_by_node, _by_pool, _by_domain).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.namespace IS 'Kubernetes namespace (the team).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_workload_gpu_hours IS 'Σ GPU-hours held by the namespace''s workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by its balloon (placeholder) pods.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.dcgm_allocated_gpu_hours IS 'Σ GPU-hours its workload pods held by the DCGM pod-label proxy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_idle_gpu_hours IS 'Of those, GPU-hours with busy < 0.05 (engine active under 5 % of the hour): allocated but idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.busy IS 'Mean busy of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.sm_active IS 'Mean sm_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.tensor_active IS 'Mean tensor_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.dram_active IS 'Mean dram_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.energy_mwh IS 'GPU energy attributed by pod label (energy × pod_label_fraction), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

CREATE VIEW marts.gpu_hours_daily_by_pool AS
SELECT
    cluster,
    coalesce(pool, 'unknown') AS pool,
    day,
    count(DISTINCT node_name) FILTER (WHERE observed_hours > 0) AS nodes,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, coalesce(pool, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_pool IS
    'marts.node_gpu_hours summed per node pool and UTC day (the pool of each node-hour): capacity = allocated_workload + allocated_balloon + free + unavailable GPU-hours (inventory), the DCGM allocation proxy, allocated-but-idle GPU-hours, activity means weighted by GPU-hours, energy. Hourly: GROUP BY pool, hour on marts.node_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.pool IS 'Node pool (core.nodes.pool); unknown when unlabelled or seen only by telemetry.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.nodes IS 'Nodes of the pool the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.free_gpu_hours IS 'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.unavailable_gpu_hours IS 'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.energy_mwh IS 'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

CREATE VIEW marts.gpu_hours_daily_by_domain AS
SELECT
    cluster,
    coalesce(failure_domain, 'unknown') AS failure_domain,
    day,
    count(DISTINCT node_name) FILTER (WHERE observed_hours > 0) AS nodes,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, coalesce(failure_domain, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_domain IS
    'marts.node_gpu_hours summed per top-level failure domain (level 1 of core.nodes.topology under the configured profile; every level with blast radius is in marts.fleet_gpu_by_domain) and UTC day: inventory GPU-hours by bucket, DCGM allocation proxy, allocated-but-idle GPU-hours, activity means, energy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.failure_domain IS 'Top-level failure domain (its label value; unknown when nodes lack the label or are seen only by telemetry).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.nodes IS 'Nodes of the domain the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.free_gpu_hours IS 'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.unavailable_gpu_hours IS 'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.energy_mwh IS 'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

CREATE VIEW marts.gpu_hours_daily_by_model AS
SELECT
    cluster,
    coalesce(gpu_product, 'unknown') AS gpu_product,
    day,
    count(DISTINCT node_name) FILTER (WHERE observed_hours > 0) AS nodes,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, coalesce(gpu_product, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_model IS
    'marts.node_gpu_hours summed per GPU model and UTC day: inventory GPU-hours by bucket, DCGM allocation proxy, allocated-but-idle GPU-hours, activity means, energy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.gpu_product IS 'GPU model of the node (GFD nvidia.com/gpu.product; DCGM modelName for telemetry-only nodes), unknown when neither.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.nodes IS 'Nodes of that model the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.free_gpu_hours IS 'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.unavailable_gpu_hours IS 'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.energy_mwh IS 'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

CREATE VIEW marts.gpu_benchmark_summary AS
WITH valid AS (
    SELECT *
    FROM core.gpu_benchmarks
    WHERE backend IS DISTINCT FROM 'interpreter'
      AND correct IS DISTINCT FROM false
      AND gpu_uuid IS NOT NULL
),
latest AS (
    SELECT
        *,
        count(*) OVER (PARTITION BY cluster, gpu_uuid, benchmark, dtype, shape) AS measurements
    FROM valid
    QUALIFY row_number() OVER (
        PARTITION BY cluster, gpu_uuid, benchmark, dtype, shape ORDER BY ts DESC, record_id DESC
    ) = 1
),
hbm AS (
    SELECT gpu_sku, max(peak_hbm_gbps) AS peak_hbm_gbps
    FROM core.gpu_peak_reference
    GROUP BY gpu_sku
)
SELECT
    l.cluster,
    l.gpu_uuid,
    l.benchmark,
    l.dtype,
    l.shape,
    l.node,
    l.gpu_model,
    l.gpu_sku,
    l.backend,
    l.triton_version,
    l.ts AS measured_at,
    l.record_id,
    l.measurements,
    l.achieved_tflops,
    l.achieved_gbps,
    p.peak_tflops_dense AS peak_tflops,
    h.peak_hbm_gbps AS peak_gbps,
    l.achieved_tflops / nullif(p.peak_tflops_dense, 0) AS frac_peak_flops,
    l.achieved_gbps / nullif(h.peak_hbm_gbps, 0) AS frac_peak_bw,
    coalesce(l.simulated, false) AS simulated
FROM latest AS l
LEFT JOIN core.gpu_peak_reference AS p ON p.gpu_sku = l.gpu_sku AND p.dtype = l.dtype
LEFT JOIN hbm AS h ON h.gpu_sku = l.gpu_sku;

COMMENT ON VIEW marts.gpu_benchmark_summary IS
    'Per GPU, benchmark, dtype and shape: the latest valid Triton probe measurement (backend interpreter and correct = false excluded) with its fraction of the dense peak from core.gpu_peak_reference. Kernel throughput, not MFU.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.gpu_uuid IS 'GPU UUID (joins marts.gpu_hourly).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.benchmark IS 'gemm, copy, triad, softmax or layernorm.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.dtype IS 'Element type of the measurement.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.shape IS 'Problem shape (JSON text as recorded).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.node IS 'Node of the latest measurement.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.gpu_model IS 'GPU product name the probe saw.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.gpu_sku IS 'SKU matched at ingest; NULL when annex has no peak for the model.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.backend IS 'cuda or hip.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.triton_version IS 'Triton version of the latest measurement.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.measured_at IS 'When the latest measurement was taken (UTC).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.record_id IS 'record_id of the latest measurement (core.gpu_benchmarks).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.measurements IS 'Valid measurements of this GPU, benchmark, dtype and shape ever loaded.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.achieved_tflops IS 'Achieved TFLOP/s of the latest measurement (flops / p50 time, recomputed at ingest).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.achieved_gbps IS 'Achieved GB/s of the latest measurement (bytes / p50 time).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.peak_tflops IS 'Dense peak TFLOP/s of the SKU for the dtype (core.gpu_peak_reference); NULL when unknown.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.peak_gbps IS 'Peak HBM GB/s of the SKU (core.gpu_peak_reference); NULL when unknown.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.frac_peak_flops IS 'achieved_tflops / peak_tflops: compute-bound kernels'' (gemm) fraction of peak.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.frac_peak_bw IS 'achieved_gbps / peak_gbps: memory-bound kernels'' (copy, triad, softmax, layernorm) fraction of peak.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.simulated IS 'True when the measurement came from annex''s simulator.';

CREATE VIEW marts.gpu_degraded AS
WITH sweep AS (
    SELECT
        *,
        coalesce(gpu_sku, gpu_model) AS cohort_gpu,
        CASE WHEN benchmark = 'gemm' THEN 'achieved_tflops' ELSE 'achieved_gbps' END AS metric,
        CASE WHEN benchmark = 'gemm' THEN achieved_tflops ELSE achieved_gbps END AS value
    FROM marts.gpu_benchmark_summary
),
recent AS (
    SELECT *
    FROM sweep
    WHERE value IS NOT NULL
    QUALIFY measured_at >= max(measured_at) OVER (
        PARTITION BY cluster, benchmark, shape, dtype, cohort_gpu, triton_version
    ) - INTERVAL 7 DAY
),
cohorts AS (
    SELECT
        *,
        count(*) OVER cohort AS cohort_gpus,
        median(value) OVER cohort AS cohort_median,
        mad(value) OVER cohort AS cohort_mad
    FROM recent
    WINDOW cohort AS (PARTITION BY cluster, benchmark, shape, dtype, cohort_gpu, triton_version)
),
clocks AS (
    SELECT c.cluster, c.record_id, avg(h.mean_sm_clock_mhz) AS sm_clock_mhz
    FROM cohorts AS c
    JOIN marts.gpu_hourly AS h
        ON h.cluster = c.cluster AND h.gpu_uuid = c.gpu_uuid
        AND h.hour BETWEEN date_trunc('hour', c.measured_at) - INTERVAL 1 HOUR
            AND date_trunc('hour', c.measured_at) + INTERVAL 1 HOUR
    WHERE c.cohort_gpus >= 5
    GROUP BY c.cluster, c.record_id
),
flagged AS (
    SELECT
        c.*,
        greatest(c.cohort_median - 3 * 1.4826 * c.cohort_mad, 0.9 * c.cohort_median)
            AS threshold,
        k.sm_clock_mhz,
        median(k.sm_clock_mhz) OVER (
            PARTITION BY c.cluster, c.benchmark, c.shape, c.dtype, c.cohort_gpu, c.triton_version
        ) AS cohort_median_sm_clock_mhz
    FROM cohorts AS c
    LEFT JOIN clocks AS k ON k.cluster = c.cluster AND k.record_id = c.record_id
    WHERE c.cohort_gpus >= 5
    QUALIFY c.value < greatest(c.cohort_median - 3 * 1.4826 * c.cohort_mad, 0.9 * c.cohort_median)
),
evidence AS (
    SELECT
        f.cluster,
        f.record_id,
        count(h.hour) AS telemetry_hours,
        max(h.max_gpu_temp_c) AS max_gpu_temp_c,
        arg_max(h.xid_last, h.hour) FILTER (WHERE h.xid_last IS NOT NULL) AS xid_last,
        CAST(sum(h.xid_samples) AS BIGINT) AS xid_samples,
        max(h.uncorrectable_remapped_rows_max) AS uncorrectable_remapped_rows_max,
        max(h.row_remap_failure_max) AS row_remap_failure_max
    FROM flagged AS f
    LEFT JOIN marts.gpu_hourly AS h
        ON h.cluster = f.cluster AND h.gpu_uuid = f.gpu_uuid
        AND h.hour BETWEEN date_trunc('hour', f.measured_at) - INTERVAL 24 HOUR
            AND date_trunc('hour', f.measured_at) + INTERVAL 1 HOUR
    GROUP BY f.cluster, f.record_id
),
verdicts AS (
    SELECT
        f.*,
        e.telemetry_hours,
        e.max_gpu_temp_c,
        e.xid_last,
        e.xid_samples,
        e.uncorrectable_remapped_rows_max,
        e.row_remap_failure_max,
        f.sm_clock_mhz / nullif(f.cohort_median_sm_clock_mhz, 0) AS sm_clock_ratio,
        CASE
            WHEN e.xid_last IS NOT NULL THEN 'XID errors'
            WHEN e.max_gpu_temp_c >= 85 THEN 'hot'
            WHEN f.sm_clock_mhz < 0.9 * f.cohort_median_sm_clock_mhz
                THEN 'slow (clock-throttled)'
            ELSE 'slow, no telemetry corroboration'
        END AS verdict
    FROM flagged AS f
    JOIN evidence AS e ON e.cluster = f.cluster AND e.record_id = f.record_id
)
SELECT
    cluster,
    gpu_uuid,
    node,
    cohort_gpu AS gpu_sku,
    gpu_model,
    benchmark,
    shape,
    dtype,
    triton_version,
    measured_at,
    record_id,
    metric,
    value,
    cohort_gpus,
    cohort_median,
    cohort_mad,
    threshold,
    value / nullif(cohort_median, 0) AS ratio_to_median,
    value < cohort_median - 3 * 1.4826 * cohort_mad AS below_mad_rule,
    value < 0.9 * cohort_median AS below_ratio_rule,
    telemetry_hours,
    sm_clock_mhz,
    cohort_median_sm_clock_mhz,
    sm_clock_ratio,
    max_gpu_temp_c,
    xid_last,
    xid_samples,
    uncorrectable_remapped_rows_max,
    row_remap_failure_max,
    verdict <> 'slow, no telemetry corroboration' AS corroborated,
    verdict
FROM verdicts;

COMMENT ON VIEW marts.gpu_degraded IS
    'GPUs slower than their peers (reference §5.2), with the evidence. The latest sweep: each GPU''s latest valid measurement per benchmark, shape and dtype (marts.gpu_benchmark_summary), kept when at most 7 days older than its cohort''s newest. Cohort: same cluster, benchmark, shape, dtype, GPU SKU and Triton version; only cohorts of at least 5 GPUs are judged. A GPU is listed when its throughput (achieved_tflops for gemm, achieved_gbps for the memory-bound copy, triad, softmax, layernorm) is below cohort median − 3 × 1.4826 × MAD or below 0.9 × median; then DCGM telemetry (marts.gpu_hourly) around the measurement says why. One row per flagged measurement.';
COMMENT ON COLUMN marts.gpu_degraded.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_degraded.gpu_uuid IS 'The slow GPU.';
COMMENT ON COLUMN marts.gpu_degraded.node IS 'Node it was measured on.';
COMMENT ON COLUMN marts.gpu_degraded.gpu_sku IS 'Cohort GPU: the SKU matched at ingest, or the probe''s gpu_model when none matched.';
COMMENT ON COLUMN marts.gpu_degraded.gpu_model IS 'GPU product name the probe saw.';
COMMENT ON COLUMN marts.gpu_degraded.benchmark IS 'Benchmark of the measurement.';
COMMENT ON COLUMN marts.gpu_degraded.shape IS 'Problem shape (JSON text as recorded).';
COMMENT ON COLUMN marts.gpu_degraded.dtype IS 'Element type.';
COMMENT ON COLUMN marts.gpu_degraded.triton_version IS 'Triton version (part of the cohort: compilers change kernel speed).';
COMMENT ON COLUMN marts.gpu_degraded.measured_at IS 'When the measurement was taken (UTC).';
COMMENT ON COLUMN marts.gpu_degraded.record_id IS 'The measurement (core.gpu_benchmarks.record_id).';
COMMENT ON COLUMN marts.gpu_degraded.metric IS 'Which throughput is judged: achieved_tflops (gemm) or achieved_gbps (memory-bound benchmarks).';
COMMENT ON COLUMN marts.gpu_degraded.value IS 'The GPU''s throughput in that metric (TFLOP/s or GB/s).';
COMMENT ON COLUMN marts.gpu_degraded.cohort_gpus IS 'GPUs in the cohort (at least 5).';
COMMENT ON COLUMN marts.gpu_degraded.cohort_median IS 'Median throughput of the cohort.';
COMMENT ON COLUMN marts.gpu_degraded.cohort_mad IS 'Median absolute deviation of the cohort''s throughput from its median (unscaled; 1.4826 × MAD estimates the standard deviation).';
COMMENT ON COLUMN marts.gpu_degraded.threshold IS 'max(cohort_median − 3 × 1.4826 × cohort_mad, 0.9 × cohort_median): values below it are flagged.';
COMMENT ON COLUMN marts.gpu_degraded.ratio_to_median IS 'value / cohort_median.';
COMMENT ON COLUMN marts.gpu_degraded.below_mad_rule IS 'value < cohort_median − 3 × 1.4826 × cohort_mad (a robust 3-sigma outlier).';
COMMENT ON COLUMN marts.gpu_degraded.below_ratio_rule IS 'value < 0.9 × cohort_median (more than 10 % slow).';
COMMENT ON COLUMN marts.gpu_degraded.telemetry_hours IS 'Hours of marts.gpu_hourly for the GPU from 24 h before to 1 h after the measurement''s hour (the evidence window of the columns below); 0 = no telemetry.';
COMMENT ON COLUMN marts.gpu_degraded.sm_clock_mhz IS 'Mean of the GPU''s hourly mean SM clock in the hour of the measurement and the hours before and after, MHz.';
COMMENT ON COLUMN marts.gpu_degraded.cohort_median_sm_clock_mhz IS 'Median of sm_clock_mhz (same hours around each GPU''s own measurement) over the cohort''s GPUs.';
COMMENT ON COLUMN marts.gpu_degraded.sm_clock_ratio IS 'sm_clock_mhz / cohort_median_sm_clock_mhz; below 0.9 counts as clock-throttled.';
COMMENT ON COLUMN marts.gpu_degraded.max_gpu_temp_c IS 'Highest GPU temperature in the evidence window, degrees Celsius; 85 or more counts as hot.';
COMMENT ON COLUMN marts.gpu_degraded.xid_last IS 'Latest non-zero XID code in the evidence window (e.g. 13, 31, 48, 79); NULL when none.';
COMMENT ON COLUMN marts.gpu_degraded.xid_samples IS 'Samples in the evidence window showing a non-zero XID code.';
COMMENT ON COLUMN marts.gpu_degraded.uncorrectable_remapped_rows_max IS 'Highest uncorrectable remapped rows count in the evidence window.';
COMMENT ON COLUMN marts.gpu_degraded.row_remap_failure_max IS 'Highest row remap failure flag in the evidence window (1 = replace the GPU).';
COMMENT ON COLUMN marts.gpu_degraded.corroborated IS 'Whether telemetry explains the slowness (verdict other than slow, no telemetry corroboration).';
COMMENT ON COLUMN marts.gpu_degraded.verdict IS 'First that applies: XID errors (a non-zero XID in the evidence window); hot (max_gpu_temp_c >= 85); slow (clock-throttled) (sm_clock_ratio < 0.9); else slow, no telemetry corroboration (rerun the benchmark, check NVLink/PCIe and HBM).';
