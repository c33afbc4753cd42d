-- Watch mode (issue 9): exact allocation history from list-then-watch, its resume points,
-- and the latency of every request annex makes to the API server.
--
-- Written by warehouse/models/watch.py, one small transaction per batch of watch events
-- (the cursor moves in the same transaction as the rows it covers). The snapshot tables of
-- 0002 (core.pods, core.gpu_allocations, ...) are left to the hourly collection, which now
-- serves as the reconciliation check.

CREATE TABLE core.watch_cursors (
    cluster VARCHAR NOT NULL,
    resource VARCHAR NOT NULL,
    api_path VARCHAR NOT NULL,
    resource_version VARCHAR NOT NULL,
    listed_at TIMESTAMP NOT NULL,
    listed_via VARCHAR NOT NULL,
    committed_at TIMESTAMP NOT NULL,
    relists INTEGER NOT NULL,
    events BIGINT NOT NULL,
    commits BIGINT NOT NULL,
    session_id VARCHAR NOT NULL,
    PRIMARY KEY (cluster, resource)
);

COMMENT ON TABLE core.watch_cursors IS
    'Where each watch of each cluster stands: the resourceVersion up to which every change is committed (events and BOOKMARKs). A restarted watch resumes from here; a 410 Expired resets it by a new list.';
COMMENT ON COLUMN core.watch_cursors.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watch_cursors.resource IS 'Resource watched: pods, nodes, jobs or events.';
COMMENT ON COLUMN core.watch_cursors.api_path IS 'API path watched, e.g. /api/v1/pods.';
COMMENT ON COLUMN core.watch_cursors.resource_version IS
    'The resourceVersion every change up to which is committed (opaque; the next watch starts from it).';
COMMENT ON COLUMN core.watch_cursors.listed_at IS
    'When the list that started the current watch chain was committed (UTC).';
COMMENT ON COLUMN core.watch_cursors.listed_via IS
    'How that list was made: list (paged, consistent) or watchlist (streaming list, sendInitialEvents).';
COMMENT ON COLUMN core.watch_cursors.committed_at IS 'When the cursor last moved (UTC).';
COMMENT ON COLUMN core.watch_cursors.relists IS
    'Lists made since the first one because the watch fell behind compaction (410 Expired).';
COMMENT ON COLUMN core.watch_cursors.events IS 'Watch events committed (BOOKMARKs excluded).';
COMMENT ON COLUMN core.watch_cursors.commits IS 'Transactions that moved the cursor.';
COMMENT ON COLUMN core.watch_cursors.session_id IS
    'The annex watch process (session) that last moved the cursor.';

CREATE TABLE core.watched_objects (
    cluster VARCHAR NOT NULL,
    resource VARCHAR NOT NULL,
    uid VARCHAR NOT NULL,
    namespace VARCHAR,
    name VARCHAR,
    resource_version VARCHAR,
    deletion_timestamp TIMESTAMP,
    present BOOLEAN NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    gone_at TIMESTAMP,
    gone_how VARCHAR,
    PRIMARY KEY (cluster, resource, uid)
);

COMMENT ON TABLE core.watched_objects IS
    'Every pod, node, job and event the watch has seen, one row per object: its last state''s identity and whether it still exists (a DELETED event, or absence from a relist).';
COMMENT ON COLUMN core.watched_objects.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watched_objects.resource IS 'pods, nodes, jobs or events.';
COMMENT ON COLUMN core.watched_objects.uid IS 'metadata.uid of the object.';
COMMENT ON COLUMN core.watched_objects.namespace IS 'Namespace (NULL for nodes).';
COMMENT ON COLUMN core.watched_objects.name IS 'metadata.name.';
COMMENT ON COLUMN core.watched_objects.resource_version IS
    'metadata.resourceVersion of the last state seen.';
COMMENT ON COLUMN core.watched_objects.deletion_timestamp IS
    'metadata.deletionTimestamp of the last state seen (UTC), when the object was being deleted.';
COMMENT ON COLUMN core.watched_objects.present IS 'False once the object is gone.';
COMMENT ON COLUMN core.watched_objects.first_seen_at IS 'When annex first received it (UTC).';
COMMENT ON COLUMN core.watched_objects.changed_at IS 'When annex received its last change (UTC).';
COMMENT ON COLUMN core.watched_objects.gone_at IS
    'When annex learnt it was gone (UTC): the DELETED event''s arrival, or the relist.';
COMMENT ON COLUMN core.watched_objects.gone_how IS
    'deleted (a DELETED event) or relisted (absent from a list after a 410).';

CREATE TABLE core.watched_gpu_allocations (
    cluster VARCHAR NOT NULL,
    pod_uid VARCHAR NOT NULL,
    namespace VARCHAR,
    pod_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR NOT NULL,
    resource_name VARCHAR NOT NULL,
    gpus BIGINT NOT NULL,
    category VARCHAR NOT NULL,
    priority_class_name VARCHAR,
    valid_from TIMESTAMP NOT NULL,
    valid_from_source VARCHAR NOT NULL,
    valid_to TIMESTAMP,
    valid_to_source VARCHAR,
    valid_to_inferred BOOLEAN,
    opened_resource_version VARCHAR NOT NULL,
    closed_resource_version VARCHAR,
    opened_at TIMESTAMP NOT NULL,
    closed_at TIMESTAMP,
    PRIMARY KEY (cluster, pod_uid, resource_name)
);

COMMENT ON TABLE core.watched_gpu_allocations IS
    'GPU holdings as intervals built from the watch: one row per pod and GPU-like resource it held while bound to a node, with start and end taken from the pod''s own timestamps (scheduling, container start and finish, deletion), not from when annex saw them. Same keys as core.gpu_allocations (the snapshot-built history), but complete: pods that start and are deleted between two snapshots are here too.';
COMMENT ON COLUMN core.watched_gpu_allocations.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watched_gpu_allocations.pod_uid IS 'metadata.uid of the pod holding the GPUs.';
COMMENT ON COLUMN core.watched_gpu_allocations.namespace IS 'Namespace of the pod.';
COMMENT ON COLUMN core.watched_gpu_allocations.pod_name IS 'Name of the pod.';
COMMENT ON COLUMN core.watched_gpu_allocations.job_name IS 'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN core.watched_gpu_allocations.node_name IS 'The node the GPUs are on.';
COMMENT ON COLUMN core.watched_gpu_allocations.resource_name IS
    'GPU-like resource: nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs).';
COMMENT ON COLUMN core.watched_gpu_allocations.gpus IS
    'Effective request of the resource (PodRequests rule): GPUs, or MIG slices for MIG resources.';
COMMENT ON COLUMN core.watched_gpu_allocations.category IS
    'workload or balloon (placeholder pods reserving capacity).';
COMMENT ON COLUMN core.watched_gpu_allocations.priority_class_name IS 'spec.priorityClassName of the pod.';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_from IS
    'Start of the holding (UTC): the pod''s PodScheduled time, else its start, else its creation, else when annex received it (see valid_from_source).';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_from_source IS
    'Which timestamp valid_from is: scheduled, started, created or observed.';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_to IS
    'End of the holding (UTC); NULL while the pod holds the GPUs.';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_to_source IS
    'Which timestamp valid_to is: finished (containers'' finishedAt), deleted (the pod was deleted before finishing: its deletionTimestamp, the end of its grace period), observed (no such timestamp: when annex received the end) or relisted (gone when a list after a 410 Expired was taken: the list time).';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_to_inferred IS
    'True when valid_to is not a timestamp the pod carried (observed, relisted): the holding ended at or before it.';
COMMENT ON COLUMN core.watched_gpu_allocations.opened_resource_version IS
    'resourceVersion of the change (or list) that opened the row.';
COMMENT ON COLUMN core.watched_gpu_allocations.closed_resource_version IS
    'resourceVersion of the change (or list) that closed it.';
COMMENT ON COLUMN core.watched_gpu_allocations.opened_at IS 'When annex committed the opening (UTC).';
COMMENT ON COLUMN core.watched_gpu_allocations.closed_at IS
    'When annex committed the closing (UTC); closed_at - valid_to is the watch''s lag.';

CREATE TABLE audit.kubernetes_requests (
    session_id VARCHAR NOT NULL,
    cluster VARCHAR NOT NULL,
    resource VARCHAR NOT NULL,
    api_path VARCHAR NOT NULL,
    verb VARCHAR NOT NULL,
    requested_at TIMESTAMP NOT NULL,
    latency_seconds DOUBLE NOT NULL
);

COMMENT ON TABLE audit.kubernetes_requests IS
    'Every list and watch request annex watch mode made to an API server, with its latency as the client saw it (lists: request to last byte; watches: request to response headers). Snapshot collections record theirs per list in audit.kubernetes_lists.';
COMMENT ON COLUMN audit.kubernetes_requests.session_id IS 'The annex watch process that made it.';
COMMENT ON COLUMN audit.kubernetes_requests.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.kubernetes_requests.resource IS 'pods, nodes, jobs or events.';
COMMENT ON COLUMN audit.kubernetes_requests.api_path IS 'API path requested.';
COMMENT ON COLUMN audit.kubernetes_requests.verb IS 'list or watch.';
COMMENT ON COLUMN audit.kubernetes_requests.requested_at IS
    'When it was sent (UTC; for list pages, when the list started).';
COMMENT ON COLUMN audit.kubernetes_requests.latency_seconds IS 'Its latency in seconds.';

CREATE VIEW marts.watched_gpu_allocations AS
SELECT
    cluster, pod_uid, namespace, pod_name, job_name, node_name, resource_name, gpus, category,
    priority_class_name, valid_from, valid_from_source, valid_to, valid_to_source,
    valid_to_inferred,
    CAST(gpus * date_diff('second', valid_from, valid_to) AS BIGINT) AS gpu_seconds,
    CAST(gpus * date_diff('second', valid_from, valid_to) AS DOUBLE) / 3600.0 AS gpu_hours
FROM core.watched_gpu_allocations;

COMMENT ON VIEW marts.watched_gpu_allocations IS
    'GPU holdings from the watch (core.watched_gpu_allocations) with their GPU-seconds: the exact allocation history, short jobs included, for utilisation and training-compute figures. Open holdings have NULL gpu_seconds.';
COMMENT ON COLUMN marts.watched_gpu_allocations.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.watched_gpu_allocations.pod_uid IS 'metadata.uid of the pod.';
COMMENT ON COLUMN marts.watched_gpu_allocations.namespace IS 'Namespace of the pod.';
COMMENT ON COLUMN marts.watched_gpu_allocations.pod_name IS 'Name of the pod.';
COMMENT ON COLUMN marts.watched_gpu_allocations.job_name IS 'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN marts.watched_gpu_allocations.node_name IS 'The node the GPUs are on.';
COMMENT ON COLUMN marts.watched_gpu_allocations.resource_name IS
    'nvidia.com/gpu (whole GPUs) or a MIG resource (slices; never add them to whole GPUs).';
COMMENT ON COLUMN marts.watched_gpu_allocations.gpus IS 'GPUs (or MIG slices) held.';
COMMENT ON COLUMN marts.watched_gpu_allocations.category IS 'workload or balloon.';
COMMENT ON COLUMN marts.watched_gpu_allocations.priority_class_name IS 'spec.priorityClassName.';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_from IS 'Start of the holding (UTC).';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_from_source IS
    'scheduled, started, created or observed.';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_to IS 'End of the holding (UTC); NULL while held.';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_to_source IS
    'finished, deleted, observed or relisted (see core.watched_gpu_allocations).';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_to_inferred IS
    'True when valid_to is not a timestamp the pod carried.';
COMMENT ON COLUMN marts.watched_gpu_allocations.gpu_seconds IS
    'gpus x whole seconds from valid_from to valid_to (the API''s timestamps have second precision); NULL while held.';
COMMENT ON COLUMN marts.watched_gpu_allocations.gpu_hours IS 'gpu_seconds / 3600.';

CREATE VIEW marts.kubernetes_api_latency AS
WITH lists AS (
    SELECT
        cluster, resource, 'list' AS verb,
        sum(requests) AS requests,
        max(latency_p99_seconds) AS p99_seconds,
        max(latency_max_seconds) AS max_seconds,
        max(finished_at) AS last_request_at
    FROM audit.kubernetes_lists
    WHERE started_at >= CAST(timezone('UTC', now()) AS TIMESTAMP) - INTERVAL 7 DAY
    GROUP BY cluster, resource
),
watch_lists AS (
    SELECT
        cluster, resource, 'list' AS verb,
        count(*) AS requests,
        quantile_disc(latency_seconds, 0.99) AS p99_seconds,
        max(latency_seconds) AS max_seconds,
        max(requested_at) AS last_request_at
    FROM audit.kubernetes_requests
    WHERE verb = 'list' AND requested_at >= CAST(timezone('UTC', now()) AS TIMESTAMP) - INTERVAL 7 DAY
    GROUP BY cluster, resource
),
watches AS (
    SELECT
        cluster, resource, 'watch' AS verb,
        count(*) AS requests,
        quantile_disc(latency_seconds, 0.99) AS p99_seconds,
        max(latency_seconds) AS max_seconds,
        max(requested_at) AS last_request_at
    FROM audit.kubernetes_requests
    WHERE verb = 'watch' AND requested_at >= CAST(timezone('UTC', now()) AS TIMESTAMP) - INTERVAL 7 DAY
    GROUP BY cluster, resource
),
combined_lists AS (
    SELECT
        cluster, resource, verb,
        sum(requests) AS requests,
        max(p99_seconds) AS p99_seconds,
        max(max_seconds) AS max_seconds,
        max(last_request_at) AS last_request_at
    FROM (SELECT * FROM lists UNION ALL SELECT * FROM watch_lists)
    GROUP BY cluster, resource, verb
)
SELECT
    cluster, resource, verb,
    CAST(requests AS BIGINT) AS requests,
    p99_seconds,
    max_seconds,
    CASE WHEN verb = 'list' THEN 30.0 END AS slo_p99_seconds,
    CASE WHEN verb = 'list' THEN p99_seconds <= 30.0 END AS within_slo,
    last_request_at
FROM (SELECT * FROM combined_lists UNION ALL SELECT * FROM watches);

COMMENT ON VIEW marts.kubernetes_api_latency IS
    'The API server as annex''s requests saw it over the last 7 days, per cluster, resource and verb, against the upstream scalability SLO for cluster-scope LIST calls (p99 <= 30 s). List figures combine snapshot collections (their per-list p99, the worst one taken) and watch mode''s relists; watch figures are the time to the response headers (no upstream SLO: shown for trends).';
COMMENT ON COLUMN marts.kubernetes_api_latency.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.kubernetes_api_latency.resource IS 'Resource requested (pods, nodes, ...).';
COMMENT ON COLUMN marts.kubernetes_api_latency.verb IS 'list or watch.';
COMMENT ON COLUMN marts.kubernetes_api_latency.requests IS 'Requests in the last 7 days.';
COMMENT ON COLUMN marts.kubernetes_api_latency.p99_seconds IS
    '99th-percentile latency in seconds (for snapshot lists, the worst per-list p99: an upper bound).';
COMMENT ON COLUMN marts.kubernetes_api_latency.max_seconds IS 'Slowest request in seconds.';
COMMENT ON COLUMN marts.kubernetes_api_latency.slo_p99_seconds IS
    'The SLO''s p99 bound: 30 s for cluster-scope LIST; NULL for watches (none upstream).';
COMMENT ON COLUMN marts.kubernetes_api_latency.within_slo IS
    'p99_seconds <= slo_p99_seconds; NULL without an SLO.';
COMMENT ON COLUMN marts.kubernetes_api_latency.last_request_at IS 'The latest request (UTC).';
