-- The audit trail as analyst- and report-facing views: reports read only marts (issue 8), and
-- analysts find collection outcomes, rejected input and check verdicts beside the figures they
-- qualify. The raw bytes of rejected records stay in audit.rejected (they are untrusted input).

CREATE VIEW marts.collections AS
SELECT collection_id, source, cluster, status, started_at, finished_at,
       date_diff('millisecond', started_at, finished_at) / 1000.0 AS duration_s,
       rejected_count, error, annex_version
FROM audit.collections;

COMMENT ON VIEW marts.collections IS
    'Every collection annex ran (one collector against one cluster), failed and interrupted ones included, from audit.collections: what the evidence rests on and what was not collected.';
COMMENT ON COLUMN marts.collections.collection_id IS 'Unique id of the collection; the rows it loaded and its rejected records carry it.';
COMMENT ON COLUMN marts.collections.source IS 'Evidence source collected: kubernetes, telemetry, attestation, lineage, ...';
COMMENT ON COLUMN marts.collections.cluster IS 'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN marts.collections.status IS 'running, succeeded, failed or interrupted; only succeeded collections left rows behind.';
COMMENT ON COLUMN marts.collections.started_at IS 'When the collection started (UTC).';
COMMENT ON COLUMN marts.collections.finished_at IS 'When it finished (UTC); NULL while running or when it was killed.';
COMMENT ON COLUMN marts.collections.duration_s IS 'finished_at - started_at in seconds; NULL without finished_at.';
COMMENT ON COLUMN marts.collections.rejected_count IS 'Input records it rejected (marts.rejected_records has them with reasons).';
COMMENT ON COLUMN marts.collections.error IS 'Why it failed, with what to do; NULL when it succeeded.';
COMMENT ON COLUMN marts.collections.annex_version IS 'The annex version that ran it.';

CREATE VIEW marts.rejected_records AS
SELECT collection_id, source, cluster, locator, reason_code, message, raw_bytes, rejected_at
FROM audit.rejected;

COMMENT ON VIEW marts.rejected_records IS
    'Input records the collectors could not accept, with the reason (from audit.rejected, without the raw bytes, which stay there): bad input is kept and counted, never silently dropped.';
COMMENT ON COLUMN marts.rejected_records.collection_id IS 'The collection that received it (marts.collections).';
COMMENT ON COLUMN marts.rejected_records.source IS 'Evidence source of the collection.';
COMMENT ON COLUMN marts.rejected_records.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.rejected_records.locator IS 'Where in the input the record was, e.g. a page and item, or a file and line.';
COMMENT ON COLUMN marts.rejected_records.reason_code IS 'Machine-readable reason, stable across versions (e.g. missing_field, schema_violation).';
COMMENT ON COLUMN marts.rejected_records.message IS 'Human-readable explanation.';
COMMENT ON COLUMN marts.rejected_records.raw_bytes IS 'Size of the record as received, in bytes (the bytes themselves: audit.rejected.raw).';
COMMENT ON COLUMN marts.rejected_records.rejected_at IS 'When it was rejected (UTC).';

CREATE VIEW marts.check_results AS
SELECT checked_at, check_name, asset, cluster, collection_id, passed, severity, blocking,
       run_id, details
FROM audit.check_results;

COMMENT ON VIEW marts.check_results IS
    'Every asset-check evaluation (Dagster) with its verdict and figures, from audit.check_results: the data-quality evidence reports cite.';
COMMENT ON COLUMN marts.check_results.checked_at IS 'When the check ran (UTC).';
COMMENT ON COLUMN marts.check_results.check_name IS 'The check, e.g. inventory_no_duplicate_uids.';
COMMENT ON COLUMN marts.check_results.asset IS 'The asset checked.';
COMMENT ON COLUMN marts.check_results.cluster IS 'The cluster checked; NULL when the check covered every cluster.';
COMMENT ON COLUMN marts.check_results.collection_id IS 'The cluster''s latest succeeded collection when the check ran; NULL without a cluster.';
COMMENT ON COLUMN marts.check_results.passed IS 'The verdict.';
COMMENT ON COLUMN marts.check_results.severity IS 'ERROR or WARN.';
COMMENT ON COLUMN marts.check_results.blocking IS 'Whether a failure stops downstream assets.';
COMMENT ON COLUMN marts.check_results.run_id IS 'The Dagster run that evaluated it.';
COMMENT ON COLUMN marts.check_results.details IS 'The figures behind the verdict (JSON).';

-- One allocation history for every model that counts GPU-hours (utilisation, training compute,
-- attestation coverage): the watch's intervals (exact, complete between snapshots) where the
-- watch saw the pod, the snapshot-built intervals for everything else (clusters or periods
-- without a watch). Same key, (cluster, pod_uid, resource_name), in both.
CREATE VIEW core.gpu_allocation_history AS
SELECT cluster, pod_uid, namespace, pod_name, job_name, node_name, resource_name, gpus,
       category, priority_class_name, valid_from, valid_from_source, valid_to, valid_to_source,
       valid_to_inferred, 'watch' AS recorded_by
FROM core.watched_gpu_allocations
UNION ALL
SELECT a.cluster, a.pod_uid, a.namespace, a.pod_name, a.job_name, a.node_name, a.resource_name,
       a.gpus, a.category, a.priority_class_name, a.valid_from, a.valid_from_source, a.valid_to,
       a.valid_to_source, a.valid_to_inferred, 'snapshot' AS recorded_by
FROM core.gpu_allocations AS a
WHERE NOT EXISTS (
    SELECT 1 FROM core.watched_gpu_allocations AS w
    WHERE w.cluster = a.cluster AND w.pod_uid = a.pod_uid AND w.resource_name = a.resource_name
);

COMMENT ON VIEW core.gpu_allocation_history IS
    'GPU holdings as intervals, the best record of each: from the watch (core.watched_gpu_allocations: exact times, pods that lived between two snapshots included) where annex watch saw the pod, else from the hourly snapshots (core.gpu_allocations). Utilisation, training compute and attestation coverage count GPU-hours from here.';
COMMENT ON COLUMN core.gpu_allocation_history.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_allocation_history.pod_uid IS 'metadata.uid of the pod holding the GPUs.';
COMMENT ON COLUMN core.gpu_allocation_history.namespace IS 'Namespace of the pod.';
COMMENT ON COLUMN core.gpu_allocation_history.pod_name IS 'Name of the pod.';
COMMENT ON COLUMN core.gpu_allocation_history.job_name IS 'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN core.gpu_allocation_history.node_name IS 'The node the GPUs are on.';
COMMENT ON COLUMN core.gpu_allocation_history.resource_name IS 'nvidia.com/gpu or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs).';
COMMENT ON COLUMN core.gpu_allocation_history.gpus IS 'Effective request of the resource (GPUs, or MIG slices).';
COMMENT ON COLUMN core.gpu_allocation_history.category IS 'workload or balloon (placeholder pods reserving capacity).';
COMMENT ON COLUMN core.gpu_allocation_history.priority_class_name IS 'spec.priorityClassName of the pod.';
COMMENT ON COLUMN core.gpu_allocation_history.valid_from IS 'Start of the holding (UTC), from the pod''s own timestamps (see valid_from_source).';
COMMENT ON COLUMN core.gpu_allocation_history.valid_from_source IS 'Which timestamp valid_from is: scheduled, started, created or observed.';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to IS 'End of the holding (UTC); NULL while the pod holds the GPUs.';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to_source IS 'Which timestamp valid_to is (finished, deleted, observed, relisted, or the snapshot''s collection time when inferred).';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to_inferred IS 'True when valid_to is not a timestamp the pod carried: the holding ended at or before it.';
COMMENT ON COLUMN core.gpu_allocation_history.recorded_by IS 'watch (annex watch: exact and complete) or snapshot (the hourly collection: pods that lived between two snapshots are missing).';
