-- bench.year: a year of a GPU fleet, written straight into a migrated warehouse (no simulator,
-- no Python loop over rows). Statements are split on ";\n" and run in sections; `$name` are
-- parameters. Every value comes from hash() of its keys, so a rerun builds the same year and the
-- columns have the spread of real data (compression measured on them is honest, not on
-- all-equal columns).
--
-- The fleet: blocks of 8 nodes x 8 GPUs (64 GPUs) each in one pool: half "train" (slots of
-- 24-168 h, one 64-GPU Job per slot, a lineage run each), 30% "batch" (slots of 1-8 h), 20%
-- "inference" (two-week slots). A slot is busy (a Job's pods hold the GPUs), holds balloon pods,
-- or is free; a node fails for a whole day now and then (no telemetry, unavailable GPU-hours).

-- section: setup
CREATE TEMP TABLE y_blocks AS
SELECT b, kind,
       CAST(CASE kind
           WHEN 'train' THEN [24, 48, 72, 168][1 + CAST(hash(b, 'len') % 4 AS INTEGER)]
           WHEN 'batch' THEN [1, 2, 4, 8][1 + CAST(hash(b, 'len') % 4 AS INTEGER)]
           ELSE 336 END AS BIGINT) AS slot_hours,
       CASE kind WHEN 'train' THEN 8 WHEN 'batch' THEN 25 ELSE 5 END AS idle_percent,
       'model-' || CAST(hash(b, 'model') % $models AS VARCHAR) AS model_name,
       kind || '-' || chr(CAST(97 + hash(b, 'pool') % 3 AS INTEGER)) AS node_pool,
       hash(b, 'gpu') % 100 < 80 AS h100
FROM (SELECT b, CASE WHEN hash(b, 'kind') % 10 < 5 THEN 'train'
                     WHEN hash(b, 'kind') % 10 < 8 THEN 'batch' ELSE 'inference' END AS kind
      FROM range(CAST(ceil($nodes / 8) AS BIGINT)) AS t(b));

CREATE OR REPLACE TEMP TABLE y_blocks AS
SELECT *, CAST(hash(b, 'offset') % slot_hours AS BIGINT) AS offset_hours FROM y_blocks;

CREATE TEMP TABLE y_nodes AS
SELECT n, n // 8 AS b, 'gpu-' || lpad(CAST(n AS VARCHAR), 5, '0') AS node_name,
       md5('node/' || n) AS node_uid, bl.node_pool, bl.kind,
       CASE WHEN bl.h100 THEN 'H100-SXM5-80GB' ELSE 'H200-SXM-141GB' END AS gpu_model,
       CASE WHEN bl.h100 THEN 'NVIDIA H100 80GB HBM3' ELSE 'NVIDIA H200' END AS nvml_device_name,
       CASE WHEN bl.h100 THEN 'NVIDIA-H100-80GB-HBM3' ELSE 'NVIDIA-H200' END AS gfd_product,
       'zone-' || chr(CAST(97 + (n // 16) % 3 AS INTEGER)) AS zone,
       'zone-' || chr(CAST(97 + (n // 16) % 3 AS INTEGER)) || '/rack-'
           || lpad(CAST(n // 16 AS VARCHAR), 4, '0') AS rack
FROM range($nodes) AS t(n) JOIN y_blocks AS bl ON bl.b = t.n // 8;

CREATE TEMP TABLE y_gpus AS
SELECT n.*, g, n * 8 + g AS gpu_index,
       'GPU-' || substr(md5(n.node_uid || '/' || g), 1, 8) || '-'
           || substr(md5(n.node_uid || '/' || g), 9, 4) || '-'
           || substr(md5(n.node_uid || '/' || g), 13, 4) || '-'
           || substr(md5(n.node_uid || '/' || g), 17, 4) || '-'
           || substr(md5(n.node_uid || '/' || g), 21, 12) AS gpu_uuid,
       bl.slot_hours, bl.offset_hours, bl.idle_percent
FROM y_nodes AS n JOIN y_blocks AS bl USING (b), range(8) AS r(g);

-- every slot of every block over the year (hour indexes from $t0)
CREATE TEMP TABLE y_slots AS
SELECT bl.b, s.slot, bl.kind, bl.model_name,
       greatest(0, s.slot * bl.slot_hours - bl.offset_hours) AS first_hour,
       least($hours, (s.slot + 1) * bl.slot_hours - bl.offset_hours) AS end_hour,
       CASE WHEN hash(bl.b, s.slot, 'idle') % 100 >= bl.idle_percent THEN 'workload'
            WHEN hash(bl.b, s.slot, 'idle') % 100 < bl.idle_percent // 2 THEN 'balloon'
            END AS category,
       bl.kind || '-' || bl.b || '-' || s.slot AS job_name,
       CASE WHEN bl.kind = 'train' THEN 'research-' || CAST(hash(bl.b, 'model') % $models AS VARCHAR)
            WHEN hash(bl.b, s.slot, 'idle') % 100 < bl.idle_percent // 2 THEN 'balloon'
            ELSE 'team-' || lpad(CAST(hash(bl.b, s.slot, 'ns') % 40 AS VARCHAR), 2, '0')
            END AS namespace
FROM y_blocks AS bl, range(CAST((($hours + bl.offset_hours) // bl.slot_hours) + 1 AS BIGINT)) AS s(slot)
WHERE (s.slot + 1) * bl.slot_hours - bl.offset_hours > 0
  AND s.slot * bl.slot_hours - bl.offset_hours < $hours;

-- a node down for a whole day (about one node-day in 300)
CREATE TEMP TABLE y_down AS
SELECT n.n, n.node_name, d AS day_index
FROM y_nodes AS n, range(CAST($hours // 24 AS BIGINT)) AS t(d)
WHERE hash(n.n, d, 'down') % 300 = 0;

-- section: kubernetes
-- core.nodes as slowly changing rows: a new row at each monthly label/driver change drawn,
-- when a node goes down (not ready) and when it comes back
INSERT INTO core.nodes (cluster, node_uid, node_name, resource_version, creation_timestamp,
    labels, node_pool, instance_type, gfd_product, gpu_memory_bytes, gpu_capacity,
    gpu_allocatable, gpu_resources, mig_strategy, cuda_driver_version, cpu_capacity_millicores,
    cpu_allocatable_millicores, memory_capacity_bytes, memory_allocatable_bytes, ready,
    ready_reason, ready_since, unschedulable, taints, topology, kubelet_version,
    container_runtime_version, provider_id, content_hash, valid_from, valid_to, closed_reason,
    collection_id, closed_collection_id, boot_id, system_uuid)
WITH changes AS (
    SELECT n, $t0 - INTERVAL 30 DAY AS moment, true AS ready FROM y_nodes
    UNION ALL
    SELECT n, $t0 + to_days(CAST(m * 30 + hash(n, m, 'chgday') % 30 AS INTEGER)), true
    FROM y_nodes, range(12) AS t(m) WHERE hash(n, m, 'chg') % 4 = 0
    UNION ALL
    SELECT n, $t0 + to_days(CAST(day_index AS INTEGER)), false FROM y_down
    UNION ALL
    SELECT n, $t0 + to_days(CAST(day_index + 1 AS INTEGER)), true FROM y_down
), versions AS (
    SELECT n, moment AS valid_from, lead(moment) OVER w AS valid_to, ready,
           row_number() OVER w AS version
    FROM (SELECT n, moment, bool_and(ready) AS ready FROM changes GROUP BY n, moment)
    WINDOW w AS (PARTITION BY n ORDER BY moment)
)
SELECT $cluster, y.node_uid, y.node_name, CAST(1000 + v.version * 7919 + y.n AS VARCHAR),
       $t0 - INTERVAL 30 DAY,
       MAP {'node.kubernetes.io/instance-type': 'p5.48xlarge', 'annex.dev/pool': y.node_pool,
            'topology.kubernetes.io/zone': y.zone, 'annex.dev/rack': y.rack,
            'nvidia.com/gpu.product': y.gfd_product,
            'nvidia.com/cuda.driver.major': CAST(550 + v.version % 3 AS VARCHAR)},
       y.node_pool, 'p5.48xlarge', y.gfd_product,
       CASE WHEN y.gpu_model LIKE 'H100%' THEN 85899345920 ELSE 151397597184 END, 8,
       CASE WHEN v.ready THEN 8 ELSE 0 END,
       [{'resource_name': 'nvidia.com/gpu', 'capacity': 8, 'allocatable': 8}],
       'none', '12.' || CAST(2 + v.version % 3 AS VARCHAR), 192000, 191500,
       2164000000000 + hash(y.n) % 1000000, 2100000000000, v.ready,
       CASE WHEN v.ready THEN 'KubeletReady' ELSE 'NodeStatusUnknown' END, v.valid_from,
       NOT v.ready,
       CASE WHEN v.ready THEN [] ELSE [{'key': 'node.kubernetes.io/unreachable', 'value': NULL,
            'effect': 'NoSchedule'}] END,
       [{'level': 1, 'level_label': 'zone', 'label': 'topology.kubernetes.io/zone',
         'value': y.zone, 'domain': y.zone},
        {'level': 2, 'level_label': 'rack', 'label': 'annex.dev/rack', 'value': y.rack,
         'domain': y.rack}],
       'v1.31.' || CAST(v.version % 5 AS VARCHAR), 'containerd://1.7.2' || CAST(v.version % 3 AS VARCHAR),
       'aws:///eu-west-1a/i-' || substr(md5(y.node_uid), 1, 17), hash(y.n, v.version),
       v.valid_from, v.valid_to, CASE WHEN v.valid_to IS NOT NULL THEN 'changed' END,
       'k8s-' || strftime(v.valid_from, '%Y%m%d%H'),
       CASE WHEN v.valid_to IS NOT NULL THEN 'k8s-' || strftime(v.valid_to, '%Y%m%d%H') END,
       md5(y.node_uid || '/boot/' || v.version), md5(y.node_uid || '/system')
FROM versions AS v JOIN y_nodes AS y USING (n);

-- one pod per node and busy or balloon slot (a 64-GPU Job has 8 pods of 8 GPUs), and its
-- allocation interval; the slot still running at the end of the year is open
CREATE TEMP TABLE y_pods AS
SELECT s.*, y.node_name, y.n,
       s.job_name || '-' || (y.n % 8) AS pod_name,
       md5(s.job_name || '/' || y.n) AS pod_uid,
       $t0 + to_hours(CAST(s.first_hour AS INTEGER))
           + to_seconds(CAST(hash(s.job_name, 'start') % 600 AS INTEGER)) AS started,
       CASE WHEN s.end_hour < $hours THEN $t0 + to_hours(CAST(s.end_hour AS INTEGER))
           - to_seconds(CAST(60 + hash(s.job_name, y.n, 'end') % 900 AS INTEGER)) END AS finished
FROM y_slots AS s JOIN y_nodes AS y USING (b)
WHERE s.category IS NOT NULL;

INSERT INTO core.pods (cluster, pod_uid, namespace, pod_name, resource_version,
    creation_timestamp, labels, owner_kind, owner_name, job_name, node_name, scheduler_name,
    priority, priority_class_name, phase, qos_class, scheduled_at, started_at, finished_at,
    gpu_requests, gpus, counted, queued, is_balloon, category, content_hash, first_seen_at,
    changed_at, present, vanished_at, collection_id)
SELECT $cluster, pod_uid, namespace, pod_name, CAST(hash(pod_uid) % 100000000 AS VARCHAR),
       started - INTERVAL 20 SECOND,
       MAP {'batch.kubernetes.io/job-name': job_name, 'app': kind,
            'kueue.x-k8s.io/queue-name': namespace || '-queue'},
       'Job', job_name, job_name, node_name, 'default-scheduler',
       CASE WHEN category = 'balloon' THEN -10 ELSE 1000 END,
       CASE WHEN category = 'balloon' THEN 'balloon' ELSE 'training' END,
       CASE WHEN finished IS NULL THEN 'Running' ELSE 'Succeeded' END, 'Guaranteed',
       started - INTERVAL 5 SECOND, started, finished,
       [{'resource_name': 'nvidia.com/gpu', 'gpus': 8}], 8, true, false, category = 'balloon',
       category, hash(pod_uid, 'content'), started, coalesce(finished, started), finished IS NULL,
       finished + INTERVAL 1 HOUR, 'k8s-' || strftime(started, '%Y%m%d%H')
FROM y_pods;

INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, job_name, node_name,
    resource_name, gpus, category, priority_class_name, valid_from, valid_from_source, valid_to,
    valid_to_source, valid_to_inferred, opened_collection_id, closed_collection_id, mechanism)
SELECT $cluster, pod_uid, namespace, pod_name, job_name, node_name, 'nvidia.com/gpu', 8,
       category, CASE WHEN category = 'balloon' THEN 'balloon' ELSE 'training' END,
       started, 'pod_started', finished, CASE WHEN finished IS NOT NULL THEN 'pod_finished' END,
       false, 'k8s-' || strftime(started, '%Y%m%d%H'),
       CASE WHEN finished IS NOT NULL THEN 'k8s-' || strftime(finished, '%Y%m%d%H') END,
       'device_plugin'
FROM y_pods;

-- an hourly Kubernetes and telemetry collection for the whole year
INSERT INTO audit.collections (collection_id, source, cluster, started_at, finished_at, status,
    row_counts, rejected_count, error, annex_version)
SELECT source || '-' || strftime(moment, '%Y%m%d%H'), source, $cluster, moment,
       moment + to_seconds(CAST(20 + hash(moment, source) % 40 AS INTEGER)), 'succeeded',
       MAP {'rows': CAST(hash(moment, source, 'rows') % 100000 AS BIGINT)}, 0, NULL, 'bench'
FROM (SELECT $t0 + to_hours(CAST(h AS INTEGER)) AS moment FROM range($hours) AS t(h)),
     (VALUES ('kubernetes'), ('telemetry')) AS s(source);

-- section: lineage
-- every busy train slot is one training run (an OpenLineage run of its model's pre-training
-- job): START and COMPLETE events with a realistic payload, the corpora versions it read (a
-- monthly version of 3-8 of 240 corpora), the checkpoint before it and the one it wrote
CREATE TEMP TABLE y_runs AS
SELECT job_name, model_name, namespace,
       md5('run/' || job_name) AS run_id,
       $t0 + to_hours(CAST(first_hour AS INTEGER)) + INTERVAL 2 MINUTE AS started_at,
       CASE WHEN end_hour < $hours THEN $t0 + to_hours(CAST(end_hour AS INTEGER)) - INTERVAL 3 MINUTE END AS ended_at,
       first_hour // 720 AS month,
       row_number() OVER (PARTITION BY model_name ORDER BY first_hour, job_name) AS nth
FROM y_slots WHERE kind = 'train' AND category = 'workload';

INSERT INTO core.lineage_jobs (job_id, namespace, name, first_event_time, last_event_time)
SELECT md5('job/' || model_name), 'annex-bench', 'train/' || model_name || '/pretrain',
       min(started_at), max(coalesce(ended_at, started_at))
FROM y_runs GROUP BY model_name;

INSERT INTO core.lineage_runs (run_id, job_id, job_namespace, job_name, parent_run_id, state,
    started_at, ended_at, state_event_time, state_event_id, first_event_time, last_event_time,
    events, cluster, namespace, kubernetes_job_name, model_name, stage)
SELECT run_id, md5('job/' || model_name), 'annex-bench', 'train/' || model_name || '/pretrain',
       NULL, CASE WHEN ended_at IS NULL THEN 'RUNNING'
                  WHEN hash(run_id) % 20 = 0 THEN 'FAIL' ELSE 'COMPLETE' END,
       started_at, ended_at, coalesce(ended_at, started_at), md5('event/end/' || run_id),
       started_at, coalesce(ended_at, started_at), CASE WHEN ended_at IS NULL THEN 1 ELSE 2 END,
       $cluster, namespace, job_name, model_name, 'PRETRAINING'
FROM y_runs;

INSERT INTO core.lineage_datasets (dataset_id, namespace, name, kind, first_event_time)
SELECT md5('corpus/' || c), 's3://corpora', 'corpus-' || lpad(CAST(c AS VARCHAR), 3, '0'),
       'dataset', $t0
FROM range(240) AS t(c)
UNION ALL
SELECT md5('ckpt/' || model_name), 's3://checkpoints', model_name, 'model', min(started_at)
FROM y_runs GROUP BY model_name;

INSERT INTO core.lineage_dataset_versions (dataset_version_id, dataset_id, namespace, name,
    version, version_source, produced_by_run_id, produced_at, created_at)
SELECT md5('corpus/' || c || '/' || m), md5('corpus/' || c), 's3://corpora',
       'corpus-' || lpad(CAST(c AS VARCHAR), 3, '0'), 'v' || m, 'facet', NULL, NULL,
       $t0 + to_days(CAST(m * 30 AS INTEGER))
FROM range(240) AS t(c), range(13) AS u(m)
UNION ALL
SELECT md5('ckpt/' || run_id), md5('ckpt/' || model_name), 's3://checkpoints', model_name,
       'step-' || nth * 5000, 'run', run_id, coalesce(ended_at, started_at), started_at
FROM y_runs;

INSERT INTO core.lineage_run_io (run_id, dataset_version_id, direction, first_event_time,
    first_event_id, collection_id, named_version_id, resolution, resolved_collection_id)
SELECT r.run_id, md5('corpus/' || (hash(r.run_id, k) % 240) || '/' || r.month), 'INPUT',
       r.started_at, md5('event/start/' || r.run_id), 'lineage-' || strftime(r.started_at, '%Y%m%d%H'),
       NULL, 'named', NULL
FROM y_runs AS r, range(3 + CAST(hash(r.run_id, 'inputs') % 6 AS BIGINT)) AS t(k)
UNION ALL
SELECT r.run_id, md5('ckpt/' || p.run_id), 'INPUT', r.started_at, md5('event/start/' || r.run_id),
       'lineage-' || strftime(r.started_at, '%Y%m%d%H'), NULL, 'named', NULL
FROM y_runs AS r JOIN y_runs AS p ON p.model_name = r.model_name AND p.nth = r.nth - 1
UNION ALL
SELECT run_id, md5('ckpt/' || run_id), 'OUTPUT', coalesce(ended_at, started_at),
       md5('event/end/' || run_id), 'lineage-' || strftime(started_at, '%Y%m%d%H'), NULL, 'named', NULL
FROM y_runs;

-- DISTINCT: two draws of one run may name the same corpus
CREATE OR REPLACE TEMP TABLE y_io AS SELECT DISTINCT * FROM core.lineage_run_io;
DELETE FROM core.lineage_run_io;
INSERT INTO core.lineage_run_io SELECT * FROM y_io;

INSERT INTO core.lineage_facet_heads (entity_kind, entity_id, facet_name, event_id, event_time,
    deleted, facet, run_id, dataset_version_id, collection_id)
SELECT 'input', run_id || '/' || md5('ckpt/' || run_id), 'annex_trainingUsage',
       md5('event/start/' || run_id), started_at, false,
       '{"tokensConsumed": ' || CAST(1000000000 + hash(run_id, 'tokens') % 40000000000 AS VARCHAR) || '}',
       run_id, md5('ckpt/' || run_id), 'lineage-' || strftime(started_at, '%Y%m%d%H')
FROM y_runs;

INSERT INTO core.lineage_events (event_id, received_at, event_time, event_time_offset_minutes,
    event_kind, event_type, run_id, job_namespace, job_name, producer, schema_url, payload,
    findings, source_locator, day, collection_id, loaded_at)
SELECT md5('event/' || e.kind || '/' || r.run_id), e.moment + INTERVAL 2 SECOND, e.moment, 0, 'run', upper(e.kind),
       r.run_id, 'annex-bench', 'train/' || r.model_name || '/pretrain',
       'https://github.com/OpenLineage/OpenLineage/tree/1.24.2/integration/pytorch',
       'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent',
       '{"eventType":"' || upper(e.kind) || '","eventTime":"' || strftime(e.moment, '%Y-%m-%dT%H:%M:%S.%gZ')
           || '","run":{"runId":"' || r.run_id || '","facets":{"processing_engine":{"version":"2.5.'
           || CAST(hash(r.run_id) % 3 AS VARCHAR) || '","name":"pytorch"},"nominalTime":{"nominalStartTime":"'
           || strftime(r.started_at, '%Y-%m-%dT%H:%M:%SZ') || '"},"annex_kubernetes":{"namespace":"'
           || r.namespace || '","job":"' || r.job_name || '","pods":64,"image":"registry.example/train:'
           || substr(md5(r.model_name || r.month), 1, 12) || '"},"annex_training":{"learningRate":'
           || CAST(round(1e-4 * (1 + hash(r.run_id, 'lr') % 50 / 10.0), 7) AS VARCHAR)
           || ',"globalBatchTokens":' || CAST(4194304 * (1 + hash(r.run_id, 'bs') % 4) AS VARCHAR)
           || ',"seed":' || CAST(hash(r.run_id, 'seed') % 100000 AS VARCHAR) || '}}},"job":{"namespace":"annex-bench","name":"train/'
           || r.model_name || '/pretrain","facets":{"jobType":{"processingType":"BATCH","integration":"PYTORCH","jobType":"TRAINING"},'
           || '"sourceCode":{"language":"python","sourceCodeUrl":"https://git.example/ml/train/blob/'
           || substr(md5('commit' || r.month || r.model_name), 1, 40) || '/train.py"}}},"inputs":['
           || (SELECT string_agg('{"namespace":"s3://corpora","name":"corpus-' || lpad(CAST(hash(r.run_id, k) % 240 AS VARCHAR), 3, '0')
                  || '","facets":{"version":{"datasetVersion":"v' || r.month || '"},"schema":{"fields":[{"name":"text","type":"string"},{"name":"url","type":"string"},{"name":"lang","type":"string"},{"name":"crawl_date","type":"date"}]},"annex_eu":{"sourceKind":"'
                  || ['web_crawl', 'licensed', 'synthetic', 'user_data'][1 + CAST(hash(r.run_id, k, 'kind') % 4 AS INTEGER)]
                  || '","summaryRows":' || CAST(hash(r.run_id, k, 'rows') % 9000000000 AS VARCHAR) || '}}}', ',')
               FROM range(3 + CAST(hash(r.run_id, 'inputs') % 6 AS BIGINT)) AS t(k))
           || '],"outputs":[{"namespace":"s3://checkpoints","name":"' || r.model_name
           || '","facets":{"version":{"datasetVersion":"step-' || r.nth * 5000 || '"}}}],"producer":"https://github.com/OpenLineage/OpenLineage/tree/1.24.2/integration/pytorch"}',
       [], 'spool/' || strftime(e.moment, '%Y/%m/%d/') || md5('event/' || e.kind || '/' || r.run_id) || '.json',
       CAST(e.moment AS DATE), 'lineage-' || strftime(e.moment, '%Y%m%d%H'), e.moment + INTERVAL 1 MINUTE
FROM y_runs AS r,
     LATERAL (SELECT 'start' AS kind, r.started_at AS moment
              UNION ALL SELECT 'complete', r.ended_at WHERE r.ended_at IS NOT NULL) AS e;

-- section: month
-- one month of GPU-hours ($h0 <= hour index < $h1): marts.gpu_hourly from each GPU's slot
-- state, then the node-hours and namespace-hours summed from it (as the utilisation refresh
-- derives them from the same intervals and telemetry)
INSERT INTO marts.gpu_hourly (cluster, gpu_uuid, hour, day, node_name, nvml_device_name,
    gpu_model, samples, busy_signal, busy, sm_active, tensor_active, dram_active, power_watts,
    power_covered_seconds, energy_joules, energy_estimated_joules, max_gpu_temp_c,
    mean_sm_clock_mhz, xid_last, xid_samples, uncorrectable_remapped_rows_max,
    correctable_remapped_rows_max, row_remap_failure_max, workload_pod, workload_namespace,
    pod_label_fraction, pod_category, refreshed_at)
WITH s AS (
    SELECT g.gpu_uuid, g.node_name, g.nvml_device_name, g.gpu_model, g.b, g.n, g.kind, hr.h,
           (hr.h + g.offset_hours) // g.slot_hours AS slot,
           hash(g.gpu_uuid, hr.h) % 10000 / 10000.0 AS u,
           hash(g.gpu_uuid, 'remap') % 100 AS remap_draw
    FROM y_gpus AS g, range($h0, $h1) AS hr(h)
    WHERE NOT EXISTS (SELECT 1 FROM y_down AS d WHERE d.n = g.n AND d.day_index = hr.h // 24)
), l AS (
    SELECT s.*, sl.category, sl.namespace, sl.job_name,
           sl.category = 'workload' AND hash(s.gpu_uuid, s.slot, 'idle') % 100 < 6 AS idles
    FROM s JOIN y_slots AS sl ON sl.b = s.b AND sl.slot = s.slot
), v AS (
    SELECT *,
           CASE WHEN category IS NULL OR idles THEN 0.002 * u
                WHEN category = 'balloon' THEN 0.01 * u
                WHEN kind = 'train' THEN 0.82 + 0.17 * u
                WHEN kind = 'batch' THEN 0.35 + 0.55 * u
                ELSE 0.15 + 0.5 * u END AS busy
    FROM l
)
SELECT $cluster, gpu_uuid, $t0 + to_hours(CAST(h AS INTEGER)), CAST($t0 + to_hours(CAST(h AS INTEGER)) AS DATE),
       node_name, nvml_device_name, gpu_model,
       CASE WHEN u < 0.003 THEN 60 - CAST(u * 10000 AS INTEGER) ELSE 60 END, 'gr_engine_active',
       round(busy, 6), round(busy * (0.78 + 0.2 * u), 6),
       round(busy * CASE WHEN kind = 'train' THEN 0.42 + 0.2 * u ELSE 0.1 + 0.2 * u END, 6),
       round(busy * (0.25 + 0.3 * u), 6), round(72 + 620 * busy + 15 * u, 3), 3600.0,
       round((72 + 620 * busy + 15 * u) * 3600, 1), round((72 + 620 * busy) * 3600, 1),
       round(34 + 42 * busy + 6 * u, 0), round(1980 - 400 * u * (1 - busy), 0),
       CASE WHEN u > 0.99995 THEN 79 END, CASE WHEN u > 0.99995 THEN 1 ELSE 0 END,
       CASE WHEN remap_draw = 0 THEN 1 ELSE 0 END, CAST(remap_draw % 7 AS BIGINT), 0,
       CASE WHEN category IS NOT NULL THEN job_name || '-' || (n % 8) END,
       CASE WHEN category IS NOT NULL THEN namespace END,
       CASE WHEN category IS NOT NULL THEN 1.0 END, category, $refreshed
FROM v;

INSERT INTO marts.node_gpu_hours (cluster, node_name, hour, day, node_uid, node_pool, gpu_model,
    failure_domain, observed_hours, capacity_gpu_hours, allocatable_gpu_hours,
    allocated_workload_gpu_hours, allocated_balloon_gpu_hours, free_gpu_hours,
    unavailable_gpu_hours, allocated_beyond_allocatable_gpu_hours, telemetry_gpu_hours,
    dcgm_allocated_gpu_hours, allocated_idle_gpu_hours, busy_gpu_hours, busy_observed_gpu_hours,
    sm_active_gpu_hours, sm_active_observed_gpu_hours, tensor_active_gpu_hours,
    tensor_active_observed_gpu_hours, dram_active_gpu_hours, dram_active_observed_gpu_hours,
    energy_joules, energy_estimated_joules, refreshed_at, allocated_observed_gpu_hours,
    telemetry_only_gpu_hours, telemetry_only_idle_gpu_hours)
WITH g AS (
    SELECT node_name, hour, count(*) AS telemetry,
           count(*) FILTER (WHERE pod_category = 'workload') AS workload,
           count(*) FILTER (WHERE pod_category = 'balloon') AS balloon,
           count(*) FILTER (WHERE pod_category = 'workload' AND busy < 0.05) AS idle,
           sum(busy) AS busy, sum(sm_active) AS sm, sum(tensor_active) AS tensor,
           sum(dram_active) AS dram, sum(energy_joules) AS energy,
           sum(energy_estimated_joules) AS energy_estimated
    FROM marts.gpu_hourly
    WHERE hour >= $t0 + to_hours(CAST($h0 AS INTEGER)) AND hour < $t0 + to_hours(CAST($h1 AS INTEGER))
    GROUP BY ALL
)
SELECT $cluster, n.node_name, hr.hour, CAST(hr.hour AS DATE), n.node_uid, n.node_pool,
       n.gpu_model, n.rack, 1.0, 8, CASE WHEN g.node_name IS NULL THEN 0 ELSE 8 END,
       coalesce(g.workload, 0), coalesce(g.balloon, 0),
       CASE WHEN g.node_name IS NULL THEN 0 ELSE 8 - g.workload - g.balloon END,
       CASE WHEN g.node_name IS NULL THEN 8 ELSE 0 END, 0, coalesce(g.telemetry, 0),
       coalesce(g.workload, 0), coalesce(g.idle, 0), coalesce(g.busy, 0), coalesce(g.telemetry, 0),
       coalesce(g.sm, 0), coalesce(g.telemetry, 0), coalesce(g.tensor, 0), coalesce(g.telemetry, 0),
       coalesce(g.dram, 0), coalesce(g.telemetry, 0), coalesce(g.energy, 0),
       coalesce(g.energy_estimated, 0), $refreshed,
       coalesce(g.workload, 0), 0, 0
FROM y_nodes AS n,
     (SELECT $t0 + to_hours(CAST(h AS INTEGER)) AS hour FROM range($h0, $h1) AS t(h)) AS hr
LEFT JOIN g ON g.node_name = n.node_name AND g.hour = hr.hour;

INSERT INTO marts.namespace_gpu_hours (cluster, namespace, hour, day,
    allocated_workload_gpu_hours, allocated_balloon_gpu_hours, dcgm_allocated_gpu_hours,
    allocated_idle_gpu_hours, busy_gpu_hours, busy_observed_gpu_hours, sm_active_gpu_hours,
    sm_active_observed_gpu_hours, tensor_active_gpu_hours, tensor_active_observed_gpu_hours,
    dram_active_gpu_hours, dram_active_observed_gpu_hours, energy_joules,
    energy_estimated_joules, refreshed_at, allocated_observed_gpu_hours,
    telemetry_only_gpu_hours, telemetry_only_idle_gpu_hours)
SELECT $cluster, workload_namespace, hour, day,
       count(*) FILTER (WHERE pod_category = 'workload'),
       count(*) FILTER (WHERE pod_category = 'balloon'),
       count(*) FILTER (WHERE pod_category = 'workload'),
       count(*) FILTER (WHERE pod_category = 'workload' AND busy < 0.05),
       sum(busy), count(*), sum(sm_active), count(*), sum(tensor_active), count(*),
       sum(dram_active), count(*), sum(energy_joules), sum(energy_estimated_joules), $refreshed,
       count(*) FILTER (WHERE pod_category = 'workload'), 0, 0
FROM marts.gpu_hourly
WHERE hour >= $t0 + to_hours(CAST($h0 AS INTEGER)) AND hour < $t0 + to_hours(CAST($h1 AS INTEGER))
  AND workload_namespace IS NOT NULL
GROUP BY ALL;

-- section: raw_series
-- the retention window's DCGM series: one per GPU, field and slot (a new pod on a GPU starts a
-- new series); series_id = (gpu_index * fields + field) * stride + the slot's rank in the window,
-- so each sample finds its series by arithmetic rather than a join over billions of rows
CREATE TEMP TABLE y_fields AS
SELECT * FROM (VALUES $fields) AS f(f, field_id, metric, unit, kind);

INSERT INTO core.gpu_telemetry_series (cluster, series_id, series_key, gpu_uuid, field_id,
    metric, unit, kind, exporter_metric, node_name, gpu_index, nvml_device_name, pci_bus_id,
    device, pod, namespace, container, mig_profile, mig_instance, driver_version, labels, source,
    target, first_ts, last_ts, first_collection_id, last_collection_id, link, pod_share)
SELECT $cluster,
       CAST((g.gpu_index * $field_count + f.f) * $stride + (s.slot - (($w0 + g.offset_hours) // g.slot_hours)) AS UINTEGER),
       hash(g.gpu_uuid, f.field_id, s.slot), g.gpu_uuid, f.field_id, f.metric, f.unit, f.kind,
       'DCGM_FI_' || upper(f.metric), g.node_name, g.g, g.nvml_device_name,
       '0000:' || lpad(CAST(16 * g.g + 24 AS VARCHAR), 2, '0') || ':00.0', 'nvidia' || g.g,
       CASE WHEN s.category IS NOT NULL THEN s.job_name || '-' || (g.n % 8) END,
       CASE WHEN s.category IS NOT NULL THEN s.namespace END,
       CASE WHEN s.category IS NOT NULL THEN 'main' END, NULL, NULL, '550.127.05',
       MAP {'Hostname': g.node_name, 'modelName': g.nvml_device_name}, 'query_range',
       'http://prometheus.monitoring:9090',
       $t0 + to_hours(CAST(greatest(s.first_hour, $w0) AS INTEGER)),
       $t0 + to_hours(CAST(s.end_hour AS INTEGER)) - INTERVAL 1 MINUTE,
       'telemetry-' || strftime($t0 + to_hours(CAST(greatest(s.first_hour, $w0) AS INTEGER)), '%Y%m%d%H'),
       'telemetry-' || strftime($t0 + to_hours(CAST(s.end_hour - 1 AS INTEGER)), '%Y%m%d%H'),
       NULL, false
FROM y_gpus AS g JOIN y_slots AS s ON s.b = g.b AND s.end_hour > $w0, y_fields AS f;

-- section: raw_hour
-- one hour of one-minute samples of every field of every GPU up, in the order the loader
-- writes an hourly collection (one query_range per field, each series' points in time order),
-- values in each field's canonical unit and resolution
INSERT INTO core.gpu_telemetry_samples (ts, series_id, value)
WITH m AS (
    SELECT $hr * 60 + i AS minute FROM range(60) AS t(i)
), s AS (
    SELECT m.minute, g.gpu_index, g.gpu_uuid, g.kind, g.b,
           ($hr + g.offset_hours) // g.slot_hours AS slot,
           ($w0 + g.offset_hours) // g.slot_hours AS first_slot
    FROM m, y_gpus AS g
    WHERE NOT EXISTS (SELECT 1 FROM y_down AS d WHERE d.n = g.n AND d.day_index = $hr // 24)
), l AS (
    SELECT s.*, sl.category,
           CASE WHEN sl.category IS NULL THEN 0.0
                WHEN sl.category = 'balloon' THEN 0.005
                WHEN s.kind = 'train' THEN 0.9 WHEN s.kind = 'batch' THEN 0.6 ELSE 0.4 END AS level
    FROM s JOIN y_slots AS sl ON sl.b = s.b AND sl.slot = s.slot
)
SELECT $t0 + to_minutes(CAST(l.minute AS INTEGER)) AS ts,
       CAST((l.gpu_index * $field_count + f.f) * $stride + (l.slot - l.first_slot) AS UINTEGER) AS series_id,
       CASE f.unit
           WHEN 'ratio' THEN round(least(1.0, l.level * (0.85 + 0.3 * (hash(l.gpu_index, l.minute, f.f) % 1000) / 1000.0)), 6)
           WHEN 'watts' THEN round(70 + 640 * l.level + (hash(l.gpu_index, l.minute) % 4000) / 100.0, 3)
           WHEN 'joules' THEN round(1.0e9 + hash(l.gpu_uuid) % 100000000 + l.minute * 60 * (70 + 640 * l.level), 0)
           WHEN 'celsius' THEN 33 + round(45 * l.level) + hash(l.gpu_index, l.minute // 5, f.f) % 5
           WHEN 'mhz' THEN CASE WHEN f.metric LIKE 'mem%' THEN 2619 ELSE 1980 - 15 * (hash(l.gpu_index, l.minute // 3) % 20) END
           WHEN 'mib' THEN CASE WHEN f.metric LIKE '%free' THEN 81559 - round(78000 * l.level) ELSE round(78000 * l.level) + 4 END
           WHEN 'count' THEN hash(l.gpu_uuid, f.f) % 3
           ELSE 0 END AS value
FROM l, y_fields AS f
ORDER BY f.f, series_id, ts;
