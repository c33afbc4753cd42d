-- 0026 DRA (resource.k8s.io/v1, issue 38 item 2, first part): the devices DRA drivers publish
-- in ResourceSlices and the ResourceClaims that hold them, collected like the other resources.
--   raw.kubernetes_resource_slices / raw.kubernetes_resource_claims: kept fields, a row per
--     change (content_hash differs from the object's latest version).
--   core.dra_devices: one row per device version (valid_from / valid_to, as core.nodes), each
--     joined to its physical GPU by gpu_uuid (a MIG device's parentUUID).
--   core.dra_claims: current state per claim (present / vanished_at, as core.pods), its
--     allocation results and the pods it is reserved for.
--   An API server without resource.k8s.io/v1 (discovery answers 404, before Kubernetes 1.34)
--     is not listed for them (as for Kueue's group): never an error.
-- GPU allocation (core.gpu_allocations) and capacity marts do not count DRA devices yet.

CREATE TABLE raw.kubernetes_resource_slices (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    resource_slice_uid VARCHAR,
    resource_slice_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    driver VARCHAR,
    node_name VARCHAR,
    all_nodes BOOLEAN,
    dra_pool VARCHAR,
    pool_generation BIGINT,
    devices STRUCT(
        device VARCHAR, device_type VARCHAR, gpu_uuid VARCHAR, mig_uuid VARCHAR,
        mig_profile VARCHAR, nvml_device_name VARCHAR, memory_bytes BIGINT)[]
);

COMMENT ON TABLE raw.kubernetes_resource_slices IS
    'Kept fields of DRA ResourceSlices (resource.k8s.io/v1) as collected, appended only when a slice''s kept fields change (content_hash differs from its latest row here): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_resource_claims (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    claim_uid VARCHAR,
    namespace VARCHAR,
    claim_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    allocated BOOLEAN,
    results STRUCT(request VARCHAR, driver VARCHAR, dra_pool VARCHAR, device VARCHAR)[],
    reserved_for_pod_uids VARCHAR[]
);

COMMENT ON TABLE raw.kubernetes_resource_claims IS
    'Kept fields of DRA ResourceClaims (resource.k8s.io/v1) as collected, appended only when a claim''s kept fields change (content_hash differs from its current version in core.dra_claims).';

CREATE TABLE core.dra_devices (
    cluster VARCHAR NOT NULL,
    driver VARCHAR NOT NULL,
    dra_pool VARCHAR NOT NULL,
    device VARCHAR NOT NULL,
    node_name VARCHAR,
    all_nodes BOOLEAN,
    resource_slice_uid VARCHAR,
    resource_slice_name VARCHAR,
    device_type VARCHAR,
    gpu_uuid VARCHAR,
    mig_uuid VARCHAR,
    mig_profile VARCHAR,
    nvml_device_name VARCHAR,
    memory_bytes BIGINT,
    content_hash UBIGINT NOT NULL,
    valid_from TIMESTAMP NOT NULL,
    valid_to TIMESTAMP,
    closed_reason VARCHAR,
    collection_id VARCHAR NOT NULL,
    closed_collection_id VARCHAR
);

COMMENT ON TABLE core.dra_devices IS
    'Devices published by DRA drivers in ResourceSlices, one row per version of a device (driver, dra_pool, device): valid_from/valid_to as in core.nodes. A GPU or MIG device carries its physical GPU''s gpu_uuid; IMEX channels and daemons (ComputeDomains) carry none and are not GPUs.';
COMMENT ON COLUMN core.dra_devices.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.dra_devices.driver IS
    'spec.driver of the ResourceSlice, e.g. gpu.nvidia.com or compute-domain.nvidia.com.';
COMMENT ON COLUMN core.dra_devices.dra_pool IS
    'spec.pool.name of the ResourceSlice: the DRA pool (the NVIDIA driver names it after the node); not a node pool.';
COMMENT ON COLUMN core.dra_devices.device IS
    'spec.devices[].name: the device name a claim''s allocation result names, unique within (driver, dra_pool).';
COMMENT ON COLUMN core.dra_devices.node_name IS
    'spec.nodeName: the node whose devices the slice publishes; NULL for slices of all nodes or a node selector.';
COMMENT ON COLUMN core.dra_devices.all_nodes IS
    'spec.allNodes: the devices are reachable from every node (network-attached devices).';
COMMENT ON COLUMN core.dra_devices.resource_slice_uid IS
    'metadata.uid of the ResourceSlice that published this version of the device.';
COMMENT ON COLUMN core.dra_devices.resource_slice_name IS
    'metadata.name of that ResourceSlice.';
COMMENT ON COLUMN core.dra_devices.device_type IS
    'The driver''s type attribute: gpu, mig (a MIG device), channel or daemon (IMEX, ComputeDomains); NULL when the driver sets none.';
COMMENT ON COLUMN core.dra_devices.gpu_uuid IS
    'UUID of the physical GPU the device is or is part of: the uuid attribute of a GPU, the parentUUID attribute of a MIG device; NULL for devices that are not GPUs.';
COMMENT ON COLUMN core.dra_devices.mig_uuid IS
    'The uuid attribute of a MIG device (the MIG instance''s UUID, MIG-...); NULL for whole GPUs.';
COMMENT ON COLUMN core.dra_devices.mig_profile IS
    'The profile attribute of a MIG device, e.g. 1g.10gb; NULL for whole GPUs.';
COMMENT ON COLUMN core.dra_devices.nvml_device_name IS
    'The productName attribute (the NVML device name, e.g. NVIDIA H100 80GB HBM3); canonical model: marts.gpu_models.';
COMMENT ON COLUMN core.dra_devices.memory_bytes IS
    'capacity.memory of the device in bytes (the MIG instance''s memory for a MIG device).';
COMMENT ON COLUMN core.dra_devices.content_hash IS
    '64-bit DuckDB hash() of the kept fields of the device and its slice (resource_version and pool generation excluded); a new version starts only when it changes.';
COMMENT ON COLUMN core.dra_devices.valid_from IS
    'collected_at of the collection that first saw this version (UTC).';
COMMENT ON COLUMN core.dra_devices.valid_to IS
    'collected_at of the collection that closed this version (UTC); NULL for the current version.';
COMMENT ON COLUMN core.dra_devices.closed_reason IS
    'changed (a newer version follows) or removed (absent from a consistent list of ResourceSlices); NULL while current.';
COMMENT ON COLUMN core.dra_devices.collection_id IS
    'The collection that opened this version (audit.collections).';
COMMENT ON COLUMN core.dra_devices.closed_collection_id IS
    'The collection that closed this version (audit.collections); NULL while current.';

CREATE TABLE core.dra_claims (
    cluster VARCHAR NOT NULL,
    claim_uid VARCHAR,
    namespace VARCHAR,
    claim_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    allocated BOOLEAN,
    results STRUCT(request VARCHAR, driver VARCHAR, dra_pool VARCHAR, device VARCHAR)[],
    reserved_for_pod_uids VARCHAR[],
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.dra_claims IS
    'DRA ResourceClaims, one row per claim (current state; present = false once deleted): the devices allocated to it and the pods it is reserved for. marts.dra_gpu_claims joins the devices to their GPUs.';
COMMENT ON COLUMN core.dra_claims.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.dra_claims.claim_uid IS
    'metadata.uid of the ResourceClaim.';
COMMENT ON COLUMN core.dra_claims.namespace IS
    'metadata.namespace of the ResourceClaim (its pods'' namespace).';
COMMENT ON COLUMN core.dra_claims.claim_name IS
    'metadata.name of the ResourceClaim (for a claim made from a ResourceClaimTemplate, the generated name).';
COMMENT ON COLUMN core.dra_claims.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.dra_claims.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.dra_claims.deletion_timestamp IS
    'metadata.deletionTimestamp (UTC): set once deletion was requested.';
COMMENT ON COLUMN core.dra_claims.allocated IS
    'Whether status.allocation is set: the scheduler allocated devices to the claim.';
COMMENT ON COLUMN core.dra_claims.results IS
    'status.allocation.devices.results[]: each allocated device as {request, driver, dra_pool (the result''s pool), device}; empty until allocated.';
COMMENT ON COLUMN core.dra_claims.reserved_for_pod_uids IS
    'status.reservedFor[] entries of resource pods: the uids of the pods using the claim (two or more for a shared claim).';
COMMENT ON COLUMN core.dra_claims.content_hash IS
    '64-bit DuckDB hash() of the kept fields (resource_version excluded); the row is updated only when it changes.';
COMMENT ON COLUMN core.dra_claims.first_seen_at IS
    'collected_at of the first collection that saw the object (UTC).';
COMMENT ON COLUMN core.dra_claims.changed_at IS
    'collected_at of the collection that first saw the current kept fields (UTC).';
COMMENT ON COLUMN core.dra_claims.present IS
    'True while the object exists: false once a consistent list no longer held it (inconsistent lists never mark objects gone).';
COMMENT ON COLUMN core.dra_claims.vanished_at IS
    'collected_at of the first consistent list that no longer held the object (UTC); NULL while present.';
COMMENT ON COLUMN core.dra_claims.collection_id IS
    'The collection that last changed this row (audit.collections).';

COMMENT ON COLUMN audit.kubernetes_lists.resource IS
    'Resource listed: nodes, pods, jobs, priority_classes, events, the kueue_* resources or resource_slices and resource_claims (DRA), the last two only where the API server serves them.';
