-- Staging tables of the Kubernetes model: one per table collectors/kubernetes yields, columns
-- by name = the collector's Arrow schemas (collectors/kubernetes/schema.py; a test checks).

CREATE TEMP TABLE stage_nodes (
    node_uid VARCHAR,
    node_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    pool VARCHAR,
    instance_type VARCHAR,
    gpu_product VARCHAR,
    gpu_memory_bytes BIGINT,
    gpu_capacity BIGINT,
    gpu_allocatable BIGINT,
    gpu_resources STRUCT(resource_name VARCHAR, capacity BIGINT, allocatable BIGINT)[],
    mig_strategy VARCHAR,
    cuda_driver_version VARCHAR,
    cpu_capacity_millicores BIGINT,
    cpu_allocatable_millicores BIGINT,
    memory_capacity_bytes BIGINT,
    memory_allocatable_bytes BIGINT,
    ready BOOLEAN,
    ready_reason VARCHAR,
    ready_since TIMESTAMP,
    unschedulable BOOLEAN,
    taints STRUCT(key VARCHAR, value VARCHAR, effect VARCHAR)[],
    topology STRUCT(level SMALLINT, level_label VARCHAR, label VARCHAR, value VARCHAR, domain VARCHAR)[],
    kubelet_version VARCHAR,
    container_runtime_version VARCHAR,
    provider_id VARCHAR,
    boot_id VARCHAR,
    system_uuid VARCHAR,
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_pods (
    pod_uid VARCHAR,
    namespace VARCHAR,
    pod_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    owner_kind VARCHAR,
    owner_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR,
    nominated_node_name VARCHAR,
    scheduler_name VARCHAR,
    runtime_class_name VARCHAR,
    priority INTEGER,
    priority_class_name VARCHAR,
    phase VARCHAR,
    reason VARCHAR,
    qos_class VARCHAR,
    scheduled_at TIMESTAMP,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    gpu_requests STRUCT(resource_name VARCHAR, gpus BIGINT)[],
    gpus BIGINT,
    counted BOOLEAN,
    queued BOOLEAN,
    is_balloon BOOLEAN,
    category VARCHAR,
    claim_sources STRUCT(pod_claim VARCHAR, claim_name VARCHAR, claim_template_name VARCHAR)[],
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_jobs (
    job_uid VARCHAR,
    namespace VARCHAR,
    job_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    owner_kind VARCHAR,
    owner_name VARCHAR,
    parallelism INTEGER,
    completions INTEGER,
    suspend BOOLEAN,
    active INTEGER,
    succeeded INTEGER,
    failed INTEGER,
    started_at TIMESTAMP,
    completed_at TIMESTAMP,
    finished_condition VARCHAR,
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_priority_classes (
    priority_class_uid VARCHAR,
    priority_class_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    value INTEGER,
    global_default BOOLEAN,
    preemption_policy VARCHAR,
    description VARCHAR,
    is_balloon BOOLEAN,
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_events (
    event_uid VARCHAR,
    namespace VARCHAR,
    event_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    involved_kind VARCHAR,
    involved_namespace VARCHAR,
    involved_name VARCHAR,
    involved_uid VARCHAR,
    reason VARCHAR,
    type VARCHAR,
    count INTEGER,
    first_timestamp TIMESTAMP,
    last_timestamp TIMESTAMP,
    event_time TIMESTAMP,
    reporting_component VARCHAR,
    source_host VARCHAR,
    message VARCHAR,
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_lists (
    resource VARCHAR,
    api_path VARCHAR,
    resource_version VARCHAR,
    consistent BOOLEAN,
    pages INTEGER,
    items BIGINT,
    rejected BIGINT,
    restarts INTEGER,
    retries INTEGER,
    requests INTEGER,
    response_bytes BIGINT,
    page_size INTEGER,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    latency_max_seconds DOUBLE,
    latency_p50_seconds DOUBLE,
    latency_p99_seconds DOUBLE,
    latency_total_seconds DOUBLE
);

CREATE TEMP TABLE stage_resource_slices (
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
        mig_profile VARCHAR, nvml_device_name VARCHAR, memory_bytes BIGINT)[],
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_resource_claims (
    claim_uid VARCHAR,
    namespace VARCHAR,
    claim_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    allocated BOOLEAN,
    results STRUCT(request VARCHAR, driver VARCHAR, dra_pool VARCHAR, device VARCHAR)[],
    reserved_for_pod_uids VARCHAR[],
    device_requests STRUCT(
        request VARCHAR, device_class_name VARCHAR, allocation_mode VARCHAR,
        device_count BIGINT)[],
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_resource_claim_templates (
    claim_template_uid VARCHAR,
    namespace VARCHAR,
    claim_template_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    device_requests STRUCT(
        request VARCHAR, device_class_name VARCHAR, allocation_mode VARCHAR,
        device_count BIGINT)[],
    list_attempt INTEGER
);

-- Kueue (collectors/kubernetes/kueue.py): listed only where the API server serves kueue.x-k8s.io.

CREATE TEMP TABLE stage_kueue_workloads (
    workload_uid VARCHAR,
    namespace VARCHAR,
    workload_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    local_queue VARCHAR,
    cluster_queue VARCHAR,
    owner_kind VARCHAR,
    owner_name VARCHAR,
    priority_class_name VARCHAR,
    priority INTEGER,
    gpu_requests STRUCT(resource_name VARCHAR, gpus BIGINT)[],
    requested_gpus BIGINT,
    admitted_gpus_by_flavor STRUCT(flavor VARCHAR, resource_name VARCHAR, gpus BIGINT)[],
    state VARCHAR,
    quota_reserved_at TIMESTAMP,
    admitted_at TIMESTAMP,
    evicted_at TIMESTAMP,
    eviction_reason VARCHAR,
    preempted_at TIMESTAMP,
    preemption_reason VARCHAR,
    finished_at TIMESTAMP,
    queued_from TIMESTAMP,
    queued_to TIMESTAMP,
    admitted_from TIMESTAMP,
    admitted_to TIMESTAMP,
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_kueue_cluster_queues (
    cluster_queue_uid VARCHAR,
    cluster_queue VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    cohort VARCHAR,
    queueing_strategy VARCHAR,
    pending_workloads INTEGER,
    admitted_workloads INTEGER,
    quotas STRUCT(flavor VARCHAR, resource_name VARCHAR, is_gpu BOOLEAN, nominal_quota DOUBLE, borrowing_limit DOUBLE, lending_limit DOUBLE, used DOUBLE, borrowed DOUBLE)[],
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_kueue_local_queues (
    local_queue_uid VARCHAR,
    namespace VARCHAR,
    local_queue VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    cluster_queue VARCHAR,
    pending_workloads INTEGER,
    admitted_workloads INTEGER,
    list_attempt INTEGER
);

CREATE TEMP TABLE stage_kueue_resource_flavors (
    resource_flavor_uid VARCHAR,
    flavor VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    node_labels MAP(VARCHAR, VARCHAR),
    list_attempt INTEGER
);
