-- marts.pending_gpu_demand: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.pending_gpu_demand AS
WITH pending AS (
    -- pods waiting for the scheduler: Pending, not bound (core.pods.queued)
    SELECT cluster, pod_uid, namespace, pod_name, gpu_requests, gpus, claim_sources
    FROM core.pods
    WHERE present AND queued
),
entries AS (
    SELECT p.cluster, p.pod_uid, p.namespace, unnest(p.claim_sources) AS s
    FROM pending AS p
),
resolved AS (
    -- each claim entry: the ResourceClaim it names (directly, or generated from its template),
    -- else, before the claim exists, the template's requests; an allocated claim's devices
    -- are already held (core.gpu_allocations) and add no demand
    SELECT
        e.cluster, e.pod_uid, e.namespace,
        c.claim_uid,
        coalesce(c.allocated, false) AS allocated,
        CASE
            WHEN c.claim_uid IS NOT NULL THEN c.device_requests
            WHEN e.s.claim_name IS NULL THEN t.device_requests
        END AS device_requests,
        c.claim_uid IS NULL AND (e.s.claim_name IS NOT NULL OR t.claim_template_uid IS NULL)
            AS unresolved
    FROM entries AS e
    LEFT JOIN core.dra_claims AS c
        ON c.cluster = e.cluster AND c.namespace = e.namespace AND c.claim_name = e.s.claim_name
       AND c.present
    LEFT JOIN core.dra_claim_templates AS t
        ON t.cluster = e.cluster AND t.namespace = e.namespace
       AND t.claim_template_name = e.s.claim_template_name AND t.present
),
sharing AS (
    -- a claim named by k pending pods is one demand: 1/k to each
    SELECT cluster, claim_uid, count(DISTINCT pod_uid) AS pending_pods
    FROM resolved
    WHERE claim_uid IS NOT NULL
    GROUP BY cluster, claim_uid
),
requests AS (
    SELECT
        r.cluster, r.pod_uid,
        -- GPU classes by name: NVIDIA's DRA driver's gpu.nvidia.com (whole GPUs) and
        -- mig.nvidia.com (MIG devices), both selecting device.driver == "gpu.nvidia.com"
        CASE q.device_class_name
            WHEN 'gpu.nvidia.com' THEN 'gpu'
            WHEN 'mig.nvidia.com' THEN 'mig'
        END AS kind,
        q.allocation_mode,
        CAST(q.device_count AS DOUBLE) / coalesce(k.pending_pods, 1) AS devices
    FROM (SELECT *, unnest(device_requests) AS q FROM resolved WHERE NOT allocated) AS r
    LEFT JOIN sharing AS k ON k.cluster = r.cluster AND k.claim_uid = r.claim_uid
),
dra AS (
    SELECT
        cluster, pod_uid,
        sum(devices) FILTER (WHERE kind = 'gpu' AND allocation_mode <> 'All') AS dra_gpus,
        sum(devices) FILTER (WHERE kind = 'mig' AND allocation_mode <> 'All') AS dra_mig_slices,
        count(*) FILTER (WHERE kind IS NOT NULL AND allocation_mode = 'All') AS dra_all_requests
    FROM requests
    GROUP BY cluster, pod_uid
),
unresolved AS (
    SELECT cluster, pod_uid, count(*) FILTER (WHERE unresolved) AS unresolved_claims
    FROM resolved
    GROUP BY cluster, pod_uid
)
SELECT
    p.cluster,
    p.pod_uid,
    p.namespace,
    p.pod_name,
    coalesce(p.gpus, 0) AS device_plugin_gpus,
    coalesce(list_sum(list_transform(
        list_filter(p.gpu_requests, lambda x: starts_with(x.resource_name, 'nvidia.com/mig-')),
        lambda x: x.gpus)), 0) AS device_plugin_mig_slices,
    coalesce(d.dra_gpus, 0) AS dra_gpus,
    coalesce(d.dra_mig_slices, 0) AS dra_mig_slices,
    coalesce(d.dra_all_requests, 0) AS dra_all_requests,
    coalesce(u.unresolved_claims, 0) AS unresolved_claims,
    coalesce(p.gpus, 0) + coalesce(d.dra_gpus, 0) AS pending_gpus
FROM pending AS p
LEFT JOIN dra AS d ON d.cluster = p.cluster AND d.pod_uid = p.pod_uid
LEFT JOIN unresolved AS u ON u.cluster = p.cluster AND u.pod_uid = p.pod_uid;

COMMENT ON VIEW marts.pending_gpu_demand IS
    'Per pending pod (Pending, not bound, present in the latest snapshot): the GPUs it asks for, by mechanism. Device-plugin requests by the PodRequests rule, plus the GPU devices its DRA claims request (a claim it names, the claim generated from its template, or the template itself before the claim exists); an allocated claim adds nothing (its devices are held already). GPU device classes by name: gpu.nvidia.com whole GPUs, mig.nvidia.com MIG slices (NVIDIA''s DRA driver; both select device.driver == "gpu.nvidia.com"); other classes (IMEX channels) are not GPUs.';
COMMENT ON COLUMN marts.pending_gpu_demand.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.pending_gpu_demand.pod_uid IS
    'metadata.uid of the pending pod.';
COMMENT ON COLUMN marts.pending_gpu_demand.namespace IS
    'Namespace of the pod.';
COMMENT ON COLUMN marts.pending_gpu_demand.pod_name IS
    'Name of the pod.';
COMMENT ON COLUMN marts.pending_gpu_demand.device_plugin_gpus IS
    'nvidia.com/gpu the pod requests through its containers (PodRequests rule).';
COMMENT ON COLUMN marts.pending_gpu_demand.device_plugin_mig_slices IS
    'nvidia.com/mig-* slices the pod requests through its containers.';
COMMENT ON COLUMN marts.pending_gpu_demand.dra_gpus IS
    'Whole GPUs its unallocated claims request (class gpu.nvidia.com, allocationMode ExactCount, count); a claim named by k pending pods gives each 1/k, so the claim counts once.';
COMMENT ON COLUMN marts.pending_gpu_demand.dra_mig_slices IS
    'MIG devices its unallocated claims request (class mig.nvidia.com), shared claims split as dra_gpus.';
COMMENT ON COLUMN marts.pending_gpu_demand.dra_all_requests IS
    'GPU or MIG requests of its unallocated claims with allocationMode All: every matching device, a count unknown until allocated, so counted here and in no GPU figure.';
COMMENT ON COLUMN marts.pending_gpu_demand.unresolved_claims IS
    'Claim entries of the pod whose ResourceClaim (or template) annex did not find: their demand is unknown.';
COMMENT ON COLUMN marts.pending_gpu_demand.pending_gpus IS
    'Whole GPUs the pod waits for: device_plugin_gpus + dra_gpus.';
