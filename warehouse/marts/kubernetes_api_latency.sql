-- marts.kubernetes_api_latency: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.kubernetes_api_latency AS
WITH lists AS (
    SELECT
        cluster, resource, 'list' AS verb,
        sum(requests) AS requests,
        max(latency_p99_seconds) AS p99_seconds,
        max(latency_max_seconds) AS max_seconds,
        max(finished_at) AS last_request_at
    FROM audit.kubernetes_lists
    WHERE started_at >= coalesce(getvariable('as_of'), CAST(timezone('UTC', now()) AS TIMESTAMP)) - INTERVAL 7 DAY
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
    WHERE verb = 'list' AND requested_at >= coalesce(getvariable('as_of'), CAST(timezone('UTC', now()) AS TIMESTAMP)) - INTERVAL 7 DAY
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
    WHERE verb = 'watch' AND requested_at >= coalesce(getvariable('as_of'), CAST(timezone('UTC', now()) AS TIMESTAMP)) - INTERVAL 7 DAY
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
COMMENT ON COLUMN marts.kubernetes_api_latency.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.kubernetes_api_latency.resource IS
    'Resource requested (pods, nodes, ...).';
COMMENT ON COLUMN marts.kubernetes_api_latency.verb IS
    'list or watch.';
COMMENT ON COLUMN marts.kubernetes_api_latency.requests IS
    'Requests in the last 7 days.';
COMMENT ON COLUMN marts.kubernetes_api_latency.p99_seconds IS
    '99th-percentile latency in seconds (for snapshot lists, the worst per-list p99: an upper bound).';
COMMENT ON COLUMN marts.kubernetes_api_latency.max_seconds IS
    'Slowest request in seconds.';
COMMENT ON COLUMN marts.kubernetes_api_latency.slo_p99_seconds IS
    'The SLO''s p99 bound: 30 s for cluster-scope LIST; NULL for watches (none upstream).';
COMMENT ON COLUMN marts.kubernetes_api_latency.within_slo IS
    'p99_seconds <= slo_p99_seconds; NULL without an SLO.';
COMMENT ON COLUMN marts.kubernetes_api_latency.last_request_at IS
    'The latest request (UTC).';
