-- How a shared GPU counts: the one rule that marts.node_gpu_capacity, marts.fleet_gpu_by_namespace,
-- utilisation (warehouse/models/utilisation.py) and training compute (warehouse/models/compute.py)
-- read. A node advertises shares x devices of a shared resource; everything annex counts is in
-- devices (physical GPUs, or MIG slices for a MIG resource).
-- Device plugin (time-slicing, MPS): GFD labels the replicas per device
-- (nvidia.com/gpu.replicas; nvidia.com/mig-<profile>.replicas) and the strategy.
-- HAMi: no replicas label above 1, nvidia.com/gpu advertises deviceSplitCount x the GPUs GFD
-- counts (nvidia.com/gpu.count); with the MIG single strategy nvidia.com/gpu counts slices.

CREATE OR REPLACE MACRO marts.gpu_shares(node_labels, resource, advertised, strategy_of_mig) AS
    CASE
        WHEN TRY_CAST(node_labels[resource || '.replicas'] AS BIGINT) > 1
            THEN TRY_CAST(node_labels[resource || '.replicas'] AS BIGINT)
        WHEN resource = 'nvidia.com/gpu'
             AND coalesce(strategy_of_mig, 'none') <> 'single'
             AND TRY_CAST(node_labels['nvidia.com/gpu.count'] AS BIGINT) > 0
             AND advertised > TRY_CAST(node_labels['nvidia.com/gpu.count'] AS BIGINT)
             AND advertised % TRY_CAST(node_labels['nvidia.com/gpu.count'] AS BIGINT) = 0
            THEN advertised // TRY_CAST(node_labels['nvidia.com/gpu.count'] AS BIGINT)
        ELSE 1 END;

CREATE OR REPLACE MACRO marts.gpu_sharing_strategy(node_labels, resource, advertised, strategy_of_mig) AS
    CASE
        WHEN TRY_CAST(node_labels[resource || '.replicas'] AS BIGINT) > 1
            THEN coalesce(node_labels['nvidia.com/gpu.sharing-strategy'], 'time-slicing')
        WHEN marts.gpu_shares(node_labels, resource, advertised, strategy_of_mig) > 1 THEN 'hami'
        ELSE 'none' END;

-- What a holding is in devices: a replica is 1/shares of its device; a HAMi pod holds
-- nvidia.com/gpucores percent of each GPU it requests (1/shares when it names no gpucores);
-- a DRA holding (shares 1) is already in devices (a claim shared by k pods: 1/k each).
CREATE OR REPLACE MACRO marts.gpu_held(held, shares, sharing_strategy, gpucores) AS
    CASE
        WHEN sharing_strategy = 'hami' AND gpucores IS NOT NULL
            THEN held * least(gpucores, 100) / 100.0
        ELSE held / coalesce(shares, 1) END;

-- GPU holdings (rows of core.gpu_allocation_history, or a table of some of them, named by
-- holdings_table: device-plugin requests and DRA claims; HAMi's nvidia.com/gpucores rows are
-- folded into the holding they share), their gpus in devices by marts.gpu_held, with the sharing
-- of the node version valid when the holding began (the node's first observed version when the
-- pod predates it). A reader that needs a few holdings (training compute: its runs' Jobs) passes
-- a table of those: matching every holding to its node version (the ASOF join) costs in
-- proportion to the holdings given, about 10 s for a year of a 60,000-GPU fleet.
CREATE OR REPLACE MACRO marts.gpu_holdings_in_devices(holdings_table) AS TABLE
WITH sharing AS (
    SELECT
        cluster, node_name, valid_from, r.resource_name,
        marts.gpu_shares(labels, r.resource_name, r.capacity, mig_strategy) AS shares,
        marts.gpu_sharing_strategy(labels, r.resource_name, r.capacity, mig_strategy)
            AS sharing_strategy,
        row_number() OVER (
            PARTITION BY cluster, node_name, r.resource_name ORDER BY valid_from) = 1
            AS first_version
    FROM (SELECT *, unnest(gpu_resources) AS r FROM core.nodes)
),
holdings AS (
    SELECT * FROM query_table(holdings_table) WHERE resource_name <> 'nvidia.com/gpucores'
)
SELECT
    a.* REPLACE (
        marts.gpu_held(
            a.gpus,
            CASE WHEN a.mechanism = 'dra' THEN 1 ELSE coalesce(s.shares, f.shares) END,
            coalesce(s.sharing_strategy, f.sharing_strategy),
            c.gpus
        ) AS gpus
    ),
    a.gpus AS requested_gpus
FROM holdings AS a
ASOF LEFT JOIN sharing AS s
    ON s.cluster = a.cluster AND s.node_name = a.node_name
    AND s.resource_name = a.resource_name AND a.valid_from >= s.valid_from
LEFT JOIN sharing AS f
    ON f.cluster = a.cluster AND f.node_name = a.node_name
    AND f.resource_name = a.resource_name AND f.first_version
LEFT JOIN core.gpu_allocation_history AS c
    ON c.cluster = a.cluster AND c.pod_uid = a.pod_uid AND c.valid_from = a.valid_from
    AND c.resource_name = 'nvidia.com/gpucores' AND a.mechanism = 'device_plugin';

-- Every GPU holding of core.gpu_allocation_history in devices. Training compute and attestation
-- coverage read it (compute through gpu_holdings_in_devices, for its runs' holdings only); so a
-- GPU-hour of a shared GPU counts once wherever GPU-hours are summed.
CREATE OR REPLACE MACRO marts.gpu_allocations_in_devices() AS TABLE
SELECT * FROM marts.gpu_holdings_in_devices('core.gpu_allocation_history');

COMMENT ON MACRO marts.gpu_shares IS
    'Shares advertised per device of a node resource (node_labels, resource, advertised = status.capacity, strategy_of_mig = GFD nvidia.com/mig.strategy): the GFD label <resource>.replicas when above 1 (time-slicing, MPS); for HAMi advertised / nvidia.com/gpu.count; else 1. One rule for capacity, utilisation and compute (warehouse/marts/macros/gpu_sharing.sql).';
COMMENT ON MACRO marts.gpu_sharing_strategy IS
    'time-slicing or mps (GFD nvidia.com/gpu.sharing-strategy with a replicas label above 1), hami (marts.gpu_shares above 1 without one), or none; same parameters as marts.gpu_shares.';
COMMENT ON MACRO marts.gpu_held IS
    'A holding in devices (held = core.gpu_allocations.gpus, shares and sharing_strategy of the node resource, gpucores = the pod''s nvidia.com/gpucores or NULL): hami with gpucores -> held x gpucores/100 (at most 100), else held / shares. A shared GPU''s GPU-hours so split among its holders are never counted more than once.';
COMMENT ON MACRO TABLE marts.gpu_holdings_in_devices IS
    'Table macro: the holdings of the table named by holdings_table (core.gpu_allocation_history or a table of some of its rows, same columns) without the nvidia.com/gpucores rows, gpus in devices (marts.gpu_held with the sharing of the node version valid when the holding began; a DRA holding is already in devices; gpucores read from core.gpu_allocation_history) and requested_gpus as recorded.';
COMMENT ON MACRO TABLE marts.gpu_allocations_in_devices IS
    'Table macro: core.gpu_allocation_history without the nvidia.com/gpucores rows, gpus in devices (marts.gpu_held with the sharing of the node version valid when the holding began; a DRA holding is already in devices) and requested_gpus as recorded. Read by training compute and attestation coverage.';
