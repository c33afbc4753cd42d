-- 0022 telemetry as deployed (issue 35): per-link series told apart, shared GPUs' per-pod lines
-- marked, DCGM blank sentinels counted (collectors/telemetry: attribution.py, blanks.py).
-- Never edit this file once applied anywhere: add a new migration instead.

ALTER TABLE core.gpu_telemetry_series ADD COLUMN link VARCHAR;
ALTER TABLE core.gpu_telemetry_series ADD COLUMN pod_share BOOLEAN;
ALTER TABLE audit.telemetry_targets ADD COLUMN blank_values BIGINT;

COMMENT ON COLUMN core.gpu_telemetry_series.link IS 'The link of a per-link series (NVLink: its link label, or the n of a name ending _L<n>); part of the series identity. NULL for per-GPU series.';
COMMENT ON COLUMN core.gpu_telemetry_series.pod_share IS 'True for a per-pod line of a GPU shared by pods (dcgm-exporter 4.8+ --kubernetes-virtual-gpus: time-slicing or MPS) whose device-level line (no pod) was present too: the value is that pod''s share, the device-level series is the GPU''s own: the utilisation marts take the GPU''s figures from the device-level series only, and from the shares only who held the GPU (workload_pod, pod_label_fraction). NULL for series loaded before migration 0022.';
COMMENT ON COLUMN audit.telemetry_targets.blank_values IS 'Samples dropped as missing because their value was a DCGM blank sentinel (BLANK, NOT_FOUND, NOT_SUPPORTED or NOT_PERMISSIONED of INT32, INT64 or FP64: no reading, e.g. 2147483647, 9.22e18, 140737488355328). NULL for collections before migration 0022.';
