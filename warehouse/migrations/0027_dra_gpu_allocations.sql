-- 0027 GPU holdings through DRA claims (issue 38 item 2, second part).
--   core.gpu_allocations.mechanism: device_plugin (a container's resources) or dra (the devices
--     allocated to a ResourceClaim the pod uses); existing rows are device_plugin.
--   core.gpu_allocations.claim_uid: the claim of a dra row (a pod may hold several claims).
--   core.gpu_allocations.gpus becomes DOUBLE: a claim reserved for k pods gives each holder
--     1/k of each allocated device, so GPU-hours of a shared claim are counted once.
--     Device-plugin rows keep whole numbers.
ALTER TABLE core.gpu_allocations ADD COLUMN mechanism VARCHAR DEFAULT 'device_plugin';
UPDATE core.gpu_allocations SET mechanism = 'device_plugin' WHERE mechanism IS NULL;
ALTER TABLE core.gpu_allocations ADD COLUMN claim_uid VARCHAR;
ALTER TABLE core.gpu_allocations ALTER COLUMN gpus TYPE DOUBLE;

COMMENT ON TABLE core.gpu_allocations IS
    'GPU holdings as intervals: one row per pod and GPU-like resource it requested while bound to a node (mechanism device_plugin), or per pod, ResourceClaim and resource of the GPU or MIG devices allocated to the claim (mechanism dra), from its scheduling to its end. A pod absent from a consistent snapshot is closed at the collection time (valid_to_inferred); inconsistent snapshots never close anything. Open rows (valid_to IS NULL) are the current allocations.';
COMMENT ON COLUMN core.gpu_allocations.gpus IS
    'Effective request of the resource (PodRequests rule): GPUs, or MIG slices for MIG resources. For a dra row: the claim''s allocated devices of that resource divided by the pods the claim is reserved for (a claim shared by k pods gives each 1/k: GPU-hours counted once).';
COMMENT ON COLUMN core.gpu_allocations.resource_name IS
    'GPU-like resource: nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs). A DRA GPU device counts as nvidia.com/gpu, a DRA MIG device as nvidia.com/mig-<its profile>; IMEX channels and daemons (ComputeDomains) are not GPUs and make no row.';
COMMENT ON COLUMN core.gpu_allocations.mechanism IS
    'How the pod holds the GPUs: device_plugin (extended resource in the pod''s containers) or dra (devices allocated to a ResourceClaim reserved for the pod).';
COMMENT ON COLUMN core.gpu_allocations.claim_uid IS
    'metadata.uid of the ResourceClaim (core.dra_claims) for a dra row; NULL for device_plugin rows.';
