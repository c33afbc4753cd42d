-- marts.queue_wait: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.queue_wait AS
WITH clock AS (
    SELECT coalesce(getvariable('as_of'), CAST(timezone('UTC', now()) AS TIMESTAMP)) AS as_of
),
seen AS (
    -- The evidence horizon per cluster: a workload still queued at the latest successful
    -- inventory is known to wait until then, not beyond (no wait grows while annex is not
    -- collecting).
    SELECT cluster, max(started_at) AS last_seen_at
    FROM audit.collections
    WHERE source = 'kubernetes' AND status = 'succeeded'
    GROUP BY cluster
),
waits AS (
    -- Each workload's wait: from submission (or its last eviction) to admission; one still
    -- waiting waits until the latest inventory that saw it (or until it vanished).
    SELECT
        w.cluster,
        w.namespace,
        w.local_queue,
        coalesce(w.cluster_queue, l.cluster_queue) AS cluster_queue,
        w.workload_uid,
        w.requested_gpus,
        w.queued_from,
        w.queued_to,
        coalesce(
            w.queued_to, w.vanished_at, least(clock.as_of, coalesce(seen.last_seen_at, clock.as_of))
        ) AS wait_end
    FROM core.kueue_workloads AS w
    CROSS JOIN clock
    LEFT JOIN seen ON seen.cluster = w.cluster
    LEFT JOIN core.kueue_local_queues AS l
        ON l.cluster = w.cluster AND l.namespace = w.namespace AND l.local_queue = w.local_queue
    WHERE w.queued_from IS NOT NULL AND w.state <> 'inactive'
),
days AS (
    SELECT waits.*, CAST(d.day AS DATE) AS day
    FROM waits,
        LATERAL (
            SELECT unnest(generate_series(
                date_trunc('day', queued_from), date_trunc('day', wait_end), INTERVAL 1 DAY
            )) AS day
        ) AS d
)
SELECT
    days.cluster,
    days.namespace,
    days.local_queue,
    days.cluster_queue,
    days.day,
    -- Waits are half-open [queued_from, wait_end): one admitted at midnight waited the day before.
    count(*) FILTER (WHERE wait_end > days.day) AS waiting_workloads,
    count(*) FILTER (
        WHERE queued_to IS NULL OR queued_to >= least(days.day + INTERVAL 1 DAY, clock.as_of)
    ) AS still_waiting_workloads,
    coalesce(sum(requested_gpus) FILTER (
        WHERE queued_to IS NULL OR queued_to >= least(days.day + INTERVAL 1 DAY, clock.as_of)
    ), 0) AS queued_gpus,
    count(*) FILTER (WHERE CAST(queued_to AS DATE) = days.day) AS admitted_workloads,
    quantile_disc(epoch(queued_to - queued_from), 0.5)
        FILTER (WHERE CAST(queued_to AS DATE) = days.day) AS wait_p50_seconds,
    quantile_disc(epoch(queued_to - queued_from), 0.95)
        FILTER (WHERE CAST(queued_to AS DATE) = days.day) AS wait_p95_seconds,
    max(epoch(least(wait_end, days.day + INTERVAL 1 DAY) - queued_from))
        FILTER (WHERE wait_end > days.day) AS longest_wait_seconds
FROM days
CROSS JOIN clock
GROUP BY days.cluster, days.namespace, days.local_queue, days.cluster_queue, days.day;

COMMENT ON VIEW marts.queue_wait IS
    'Who waits for GPUs: per namespace (team), its Kueue LocalQueue and ClusterQueue, and UTC day, from core.kueue_workloads. A workload waits from submission (or from its last eviction, when requeued) to admission; a day counts every workload that waited during it, the GPU demand still queued at its end (for the current day: at the latest inventory), and the p50/p95 wait of the workloads admitted that day.';
COMMENT ON COLUMN marts.queue_wait.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.queue_wait.namespace IS
    'Kubernetes namespace (the team) of the workloads.';
COMMENT ON COLUMN marts.queue_wait.local_queue IS
    'The LocalQueue the workloads were submitted to (spec.queueName).';
COMMENT ON COLUMN marts.queue_wait.cluster_queue IS
    'The ClusterQueue: the one that admitted the workload, else the one its LocalQueue feeds.';
COMMENT ON COLUMN marts.queue_wait.day IS
    'UTC calendar day.';
COMMENT ON COLUMN marts.queue_wait.waiting_workloads IS
    'Workloads that waited (not admitted) at some time during the day.';
COMMENT ON COLUMN marts.queue_wait.still_waiting_workloads IS
    'Of those, the ones still waiting at the day''s end (for the current day: at the latest inventory).';
COMMENT ON COLUMN marts.queue_wait.queued_gpus IS
    'GPU demand queued: GPUs requested by the workloads still waiting at the day''s end (for the current day: at the latest inventory).';
COMMENT ON COLUMN marts.queue_wait.admitted_workloads IS
    'Workloads admitted during the day (their wait ended).';
COMMENT ON COLUMN marts.queue_wait.wait_p50_seconds IS
    'Median wait to admission, in seconds, of the workloads admitted during the day (an observed wait: quantile_disc); NULL when none was.';
COMMENT ON COLUMN marts.queue_wait.wait_p95_seconds IS
    '95th-percentile wait to admission, in seconds, of the workloads admitted during the day (quantile_disc); NULL when none was.';
COMMENT ON COLUMN marts.queue_wait.longest_wait_seconds IS
    'Longest wait, in seconds, among the day''s waiting workloads, counted to admission or to the day''s end, whichever is first; a workload still queued is counted only up to the latest successful inventory of its cluster (never beyond the evidence).';
