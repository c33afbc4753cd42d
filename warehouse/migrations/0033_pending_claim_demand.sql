-- 0033 GPUs that pending pods ask for through DRA claims (issue 38, pending demand).
--   raw/core pods: claim_sources, the pod's spec.resourceClaims[] (a ResourceClaim named
--     directly, or a ResourceClaimTemplate and the claim generated from it, once created).
--   raw.kubernetes_resource_claims / core.dra_claims: device_requests, the claim's
--     spec.devices.requests[] (class, ExactCount count or All).
--   raw.kubernetes_resource_claim_templates / core.dra_claim_templates: the requests a claim
--     made from a template will carry (a pending pod's demand before its claim exists).
--   Which device classes are GPUs: decided from the class name (marts.pending_gpu_demand):
--     gpu.nvidia.com whole GPUs, mig.nvidia.com MIG slices (NVIDIA's DRA driver's classes,
--     whose CEL selectors name device.driver == "gpu.nvidia.com"); DeviceClasses are not read.
-- Existing rows carry NULL in the new columns until their object next changes; the content
-- hash of every pod and claim changes once (a raw row each at the first collection after).

ALTER TABLE raw.kubernetes_pods ADD COLUMN claim_sources
    STRUCT(pod_claim VARCHAR, claim_name VARCHAR, claim_template_name VARCHAR)[];
ALTER TABLE core.pods ADD COLUMN claim_sources
    STRUCT(pod_claim VARCHAR, claim_name VARCHAR, claim_template_name VARCHAR)[];
COMMENT ON COLUMN core.pods.claim_sources IS
    'spec.resourceClaims[] of the pod, each {pod_claim (the entry''s name), claim_name (resourceClaimName, or for a template entry the claim generated for the pod from status.resourceClaimStatuses; NULL until created), claim_template_name (resourceClaimTemplateName)}; empty when the pod uses no DRA claim.';

ALTER TABLE raw.kubernetes_resource_claims ADD COLUMN device_requests
    STRUCT(request VARCHAR, device_class_name VARCHAR, allocation_mode VARCHAR,
           device_count BIGINT)[];
ALTER TABLE core.dra_claims ADD COLUMN device_requests
    STRUCT(request VARCHAR, device_class_name VARCHAR, allocation_mode VARCHAR,
           device_count BIGINT)[];
COMMENT ON COLUMN core.dra_claims.device_requests IS
    'spec.devices.requests[] of the claim, each {request, device_class_name, allocation_mode (ExactCount or All), device_count (NULL for All: unknown until allocated)}; for a firstAvailable request its first alternative.';

CREATE TABLE raw.kubernetes_resource_claim_templates (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    claim_template_uid VARCHAR,
    namespace VARCHAR,
    claim_template_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    device_requests STRUCT(request VARCHAR, device_class_name VARCHAR, allocation_mode VARCHAR,
                           device_count BIGINT)[]
);

COMMENT ON TABLE raw.kubernetes_resource_claim_templates IS
    'Kept fields of DRA ResourceClaimTemplates (resource.k8s.io/v1) as collected, appended only when a template''s kept fields change (content_hash differs from its current version in core.dra_claim_templates).';

CREATE TABLE core.dra_claim_templates (
    cluster VARCHAR NOT NULL,
    claim_template_uid VARCHAR,
    namespace VARCHAR,
    claim_template_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    device_requests STRUCT(request VARCHAR, device_class_name VARCHAR, allocation_mode VARCHAR,
                           device_count BIGINT)[],
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.dra_claim_templates IS
    'DRA ResourceClaimTemplates, one row per template (current state; present = false once deleted): the devices every claim made from it requests. A pending pod naming a template whose claim is not created yet asks for these (marts.pending_gpu_demand).';
COMMENT ON COLUMN core.dra_claim_templates.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.dra_claim_templates.claim_template_uid IS
    'metadata.uid of the ResourceClaimTemplate.';
COMMENT ON COLUMN core.dra_claim_templates.namespace IS
    'metadata.namespace of the ResourceClaimTemplate (the pods naming it are in it).';
COMMENT ON COLUMN core.dra_claim_templates.claim_template_name IS
    'metadata.name of the ResourceClaimTemplate (a pod''s spec.resourceClaims[].resourceClaimTemplateName).';
COMMENT ON COLUMN core.dra_claim_templates.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.dra_claim_templates.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.dra_claim_templates.device_requests IS
    'spec.spec.devices.requests[], as core.dra_claims.device_requests.';
COMMENT ON COLUMN core.dra_claim_templates.content_hash IS
    '64-bit DuckDB hash() of the kept fields (resource_version excluded); the row is updated only when it changes.';
COMMENT ON COLUMN core.dra_claim_templates.first_seen_at IS
    'collected_at of the first collection that saw the object (UTC).';
COMMENT ON COLUMN core.dra_claim_templates.changed_at IS
    'collected_at of the collection that first saw the current kept fields (UTC).';
COMMENT ON COLUMN core.dra_claim_templates.present IS
    'True while the object exists: false once a consistent list no longer held it (inconsistent lists never mark objects gone).';
COMMENT ON COLUMN core.dra_claim_templates.vanished_at IS
    'collected_at of the first consistent list that no longer held the object (UTC); NULL while present.';
COMMENT ON COLUMN core.dra_claim_templates.collection_id IS
    'The collection that last changed this row (audit.collections).';

COMMENT ON COLUMN audit.kubernetes_lists.resource IS
    'Resource listed: nodes, pods, jobs, priority_classes, events, the kueue_* resources or resource_slices, resource_claims and resource_claim_templates (DRA), the DRA ones only where the API server serves resource.k8s.io/v1.';
