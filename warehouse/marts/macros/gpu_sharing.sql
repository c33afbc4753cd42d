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

COMMENT ON MACRO marts.gpu_shares IS
    'Shares advertised per device of a node resource (node_labels, resource, advertised = status.capacity, strategy_of_mig = GFD nvidia.com/mig.strategy): the GFD label <resource>.replicas when above 1 (time-slicing, MPS); for HAMi advertised / nvidia.com/gpu.count; else 1. One rule for capacity, utilisation and compute (warehouse/marts/macros/gpu_sharing.sql).';
COMMENT ON MACRO marts.gpu_sharing_strategy IS
    'time-slicing or mps (GFD nvidia.com/gpu.sharing-strategy with a replicas label above 1), hami (marts.gpu_shares above 1 without one), or none; same parameters as marts.gpu_shares.';
COMMENT ON MACRO marts.gpu_held IS
    'A holding in devices (held = core.gpu_allocations.gpus, shares and sharing_strategy of the node resource, gpucores = the pod''s nvidia.com/gpucores or NULL): hami with gpucores -> held x gpucores/100 (at most 100), else held / shares. A shared GPU''s GPU-hours so split among its holders are never counted more than once.';
