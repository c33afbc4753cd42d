-- The peak reference: annex's own table, refreshed by every collection.
DELETE FROM core.gpu_peak_reference
WHERE (gpu_model, dtype) IN (SELECT (gpu_sku, dtype) FROM stage_gpu_peaks);

INSERT INTO core.gpu_peak_reference BY NAME
SELECT DISTINCT * RENAME (gpu_sku AS gpu_model), getvariable('collected_at') AS updated_at
FROM stage_gpu_peaks;

-- Records not loaded before (record_id is the record's own UUID).
CREATE OR REPLACE TEMP TABLE gpubench_new AS
SELECT *
FROM stage_gpubench_records AS s
WHERE NOT EXISTS (
    SELECT 1 FROM core.gpu_benchmarks AS b
    WHERE b.cluster = getvariable('cluster') AND b.record_id = s.record_id
)
QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY locator) = 1;

-- Where each GPU lives: DCGM on the node itself is the authority; without telemetry, the node
-- where most of its records (earlier and new) were measured.
CREATE OR REPLACE TEMP TABLE gpubench_gpu_home AS
WITH telemetry AS (
    SELECT gpu_uuid, arg_max(node_name, last_ts) AS node
    FROM core.gpu_telemetry_series
    WHERE cluster = getvariable('cluster') AND gpu_uuid IS NOT NULL AND node_name IS NOT NULL
    GROUP BY gpu_uuid
),
records AS (
    SELECT gpu_uuid, node, count(*) AS n
    FROM (
        SELECT gpu_uuid, node FROM gpubench_new WHERE backend <> 'interpreter'
        UNION ALL
        SELECT gpu_uuid, node_name FROM core.gpu_benchmarks
        WHERE cluster = getvariable('cluster') AND backend <> 'interpreter'
    )
    WHERE gpu_uuid IS NOT NULL AND node IS NOT NULL
    GROUP BY ALL
),
majority AS (
    SELECT gpu_uuid, arg_max(node, n) AS node, max(n) AS top, sum(n) AS total
    FROM records
    GROUP BY gpu_uuid
)
SELECT
    coalesce(t.gpu_uuid, m.gpu_uuid) AS gpu_uuid,
    coalesce(t.node, m.node) AS node,
    CASE WHEN t.node IS NOT NULL THEN 'DCGM telemetry' ELSE 'most benchmark records' END AS basis
FROM telemetry AS t
FULL OUTER JOIN majority AS m ON m.gpu_uuid = t.gpu_uuid
WHERE t.node IS NOT NULL OR m.top * 2 > m.total;

CREATE OR REPLACE TEMP TABLE gpubench_verdicts AS
WITH node_product AS (
    SELECT node_name, gfd_product AS gpu_product
    FROM core.nodes
    WHERE cluster = getvariable('cluster') AND valid_to IS NULL AND gfd_product IS NOT NULL
)
SELECT
    n.record_id,
    CASE
        WHEN h.node IS NOT NULL AND h.node <> n.node THEN 'gpu_on_other_node'
        WHEN p.gpu_product IS NOT NULL AND n.gpu_model IS NOT NULL
            AND upper(regexp_replace(trim(p.gpu_product), '[\s_-]+', ' ', 'g'))
                <> upper(regexp_replace(trim(n.gpu_model), '[\s_-]+', ' ', 'g'))
            THEN 'gpu_model_mismatch'
    END AS reason_code,
    CASE
        WHEN h.node IS NOT NULL AND h.node <> n.node THEN
            format('GPU {} is on node {} ({}), but the record says node {}', n.gpu_uuid, h.node,
                   h.basis, n.node)
        ELSE
            format('the record says GPU model {}, but node {} carries nvidia.com/gpu.product={}',
                   n.gpu_model, n.node, p.gpu_product)
    END AS message
FROM gpubench_new AS n
LEFT JOIN gpubench_gpu_home AS h ON h.gpu_uuid = n.gpu_uuid AND n.backend <> 'interpreter'
LEFT JOIN node_product AS p ON p.node_name = n.node AND n.backend <> 'interpreter';

INSERT INTO stage_rejected (locator, reason_code, message, raw)
SELECT n.locator, v.reason_code, v.message, encode(CAST(to_json(n) AS VARCHAR))
FROM gpubench_new AS n
JOIN gpubench_verdicts AS v USING (record_id)
WHERE v.reason_code IS NOT NULL;

INSERT INTO core.gpu_benchmarks BY NAME
SELECT
    getvariable('cluster') AS cluster,
    -- the record's names (raw) -> core's (docs/naming.md)
    n.* RENAME (node AS node_name, gpu_model AS nvml_device_name, gpu_sku AS gpu_model),
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS loaded_at
FROM gpubench_new AS n
JOIN gpubench_verdicts AS v USING (record_id)
WHERE v.reason_code IS NULL;

INSERT INTO core.gpu_benchmark_pods BY NAME
SELECT
    getvariable('cluster') AS cluster,
    p.* RENAME (node AS node_name),
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS read_at
FROM stage_gpubench_pods AS p
WHERE NOT EXISTS (
    SELECT 1 FROM core.gpu_benchmark_pods AS k
    WHERE k.cluster = getvariable('cluster') AND k.pod_uid = p.pod_uid
);
