-- marts.dra_gpu_claims: re-created on every migrate from this file (warehouse/marts/README.md).
-- Which pod holds which physical GPU through DRA: each present ResourceClaim's allocated
-- devices (core.dra_claims.results) joined to the device's current version in
-- core.dra_devices (driver, dra_pool, device) and so to its physical GPU (gpu_uuid) and node,
-- one row per pod the claim is reserved for. Devices that are not GPUs (IMEX channels and
-- daemons of ComputeDomains) are left out; a device no ResourceSlice publishes any more is
-- kept with NULL GPU columns (the claim still names it). A claim shared by k pods gives k
-- rows per device, each with holder_pods = k: count a device once per claim, or 1/k per pod.
-- core.gpu_allocations counts the same devices as mechanism = 'dra' rows, 1/k per holder.
CREATE OR REPLACE VIEW marts.dra_gpu_claims AS
WITH results AS (
    SELECT
        c.cluster,
        c.namespace,
        c.claim_uid,
        c.claim_name,
        unnest(c.results) AS r,
        c.reserved_for_pod_uids,
        len(c.reserved_for_pod_uids) AS holder_pods
    FROM core.dra_claims AS c
    WHERE c.present AND c.allocated
),
devices AS (
    SELECT
        x.cluster, x.namespace, x.claim_uid, x.claim_name,
        x.r.request AS request, x.r.driver AS driver, x.r.dra_pool AS dra_pool,
        x.r.device AS device,
        d.device_type, d.node_name, d.gpu_uuid, d.mig_uuid, d.mig_profile, d.nvml_device_name,
        d.memory_bytes,
        d.device IS NOT NULL AS published,
        x.reserved_for_pod_uids, x.holder_pods
    FROM results AS x
    LEFT JOIN core.dra_devices AS d
        ON d.cluster = x.cluster AND d.valid_to IS NULL
       AND d.driver = x.r.driver AND d.dra_pool = x.r.dra_pool AND d.device = x.r.device
    WHERE d.device IS NULL OR d.gpu_uuid IS NOT NULL
),
holders AS (
    SELECT
        *,
        unnest(CASE WHEN holder_pods = 0 THEN [NULL::VARCHAR] ELSE reserved_for_pod_uids END)
            AS pod_uid
    FROM devices
)
SELECT
    v.cluster,
    v.namespace,
    v.claim_uid,
    v.claim_name,
    v.request,
    v.driver,
    v.dra_pool,
    v.device,
    v.device_type,
    v.node_name,
    v.gpu_uuid,
    v.mig_uuid,
    v.mig_profile,
    m.gpu_model,
    v.nvml_device_name,
    v.memory_bytes,
    v.published,
    v.pod_uid,
    p.pod_name,
    v.holder_pods
FROM holders AS v
LEFT JOIN core.pods AS p ON p.cluster = v.cluster AND p.pod_uid = v.pod_uid
LEFT JOIN marts.gpu_models AS m
    ON m.source = 'nvml_device_name' AND m.spelling = v.nvml_device_name;

COMMENT ON VIEW marts.dra_gpu_claims IS
    'GPUs held through DRA: one row per present, allocated ResourceClaim, allocated GPU or MIG device and pod the claim is reserved for, joined to the physical GPU (gpu_uuid) and node that published the device. IMEX channels and daemons are not GPUs and are left out. Counted in core.gpu_allocations as mechanism dra (1/holder_pods per pod).';
COMMENT ON COLUMN marts.dra_gpu_claims.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.dra_gpu_claims.namespace IS 'Namespace of the claim and its pods.';
COMMENT ON COLUMN marts.dra_gpu_claims.claim_uid IS 'metadata.uid of the ResourceClaim (core.dra_claims).';
COMMENT ON COLUMN marts.dra_gpu_claims.claim_name IS 'metadata.name of the ResourceClaim.';
COMMENT ON COLUMN marts.dra_gpu_claims.request IS 'The claim''s device request this device was allocated for.';
COMMENT ON COLUMN marts.dra_gpu_claims.driver IS 'DRA driver of the device, e.g. gpu.nvidia.com.';
COMMENT ON COLUMN marts.dra_gpu_claims.dra_pool IS 'DRA pool of the device (the allocation result''s pool; not a node pool).';
COMMENT ON COLUMN marts.dra_gpu_claims.device IS 'Device name within (driver, dra_pool).';
COMMENT ON COLUMN marts.dra_gpu_claims.device_type IS 'gpu or mig (the driver''s type attribute); NULL when no current ResourceSlice publishes the device.';
COMMENT ON COLUMN marts.dra_gpu_claims.node_name IS 'Node whose ResourceSlice publishes the device.';
COMMENT ON COLUMN marts.dra_gpu_claims.gpu_uuid IS 'UUID of the physical GPU (a MIG device''s parent GPU); NULL when no current ResourceSlice publishes the device.';
COMMENT ON COLUMN marts.dra_gpu_claims.mig_uuid IS 'UUID of the MIG instance for a MIG device; NULL for whole GPUs.';
COMMENT ON COLUMN marts.dra_gpu_claims.mig_profile IS 'MIG profile of a MIG device, e.g. 1g.10gb; NULL for whole GPUs.';
COMMENT ON COLUMN marts.dra_gpu_claims.gpu_model IS 'Canonical GPU model (marts.gpu_models) of nvml_device_name; NULL when unknown to annex.';
COMMENT ON COLUMN marts.dra_gpu_claims.nvml_device_name IS 'The device''s productName attribute (NVML device name).';
COMMENT ON COLUMN marts.dra_gpu_claims.memory_bytes IS 'Memory of the device in bytes (capacity.memory).';
COMMENT ON COLUMN marts.dra_gpu_claims.published IS 'Whether a current ResourceSlice publishes the device (false: the GPU columns are NULL).';
COMMENT ON COLUMN marts.dra_gpu_claims.pod_uid IS 'A pod the claim is reserved for (status.reservedFor); NULL when the claim is reserved for none.';
COMMENT ON COLUMN marts.dra_gpu_claims.pod_name IS 'metadata.name of that pod (core.pods); NULL when annex has not collected it.';
COMMENT ON COLUMN marts.dra_gpu_claims.holder_pods IS 'How many pods the claim is reserved for: a shared claim''s device is held by all of them (count it once per claim, or 1/holder_pods per pod).';
