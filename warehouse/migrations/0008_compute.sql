-- 0008 training compute, time and energy per run and model, and the Article 51 thresholds
-- (reference eu-ai-act.md §2, §4, §7; gpu-benchmarks-telemetry.md §4). The model registry
-- (annex/model_registry.py: one YAML file per model) is copied into core.model_registry so SQL
-- can join it; refresh_compute (warehouse/models/compute.py) rebuilds the marts tables below in
-- one transaction from the lineage runs, the inventory's GPU intervals, marts.gpu_hourly and the
-- benchmark results, applying the formulas of warehouse/models/compute_formulas.py.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE core.model_registry (
    model_name VARCHAR NOT NULL PRIMARY KEY,
    provider VARCHAR NOT NULL,
    versions VARCHAR[],
    parameters BIGINT NOT NULL,
    active_parameters BIGINT,
    architecture VARCHAR NOT NULL,
    licence VARCHAR NOT NULL,
    input_modalities VARCHAR[],
    output_modalities VARCHAR[],
    generative BOOLEAN NOT NULL,
    release_date DATE,
    eu_market_date DATE,
    base_models VARCHAR[],
    reported_compute_flop DOUBLE,
    lineage_jobs VARCHAR[],
    namespaces VARCHAR[],
    training_dtype VARCHAR NOT NULL,
    plan_end TIMESTAMP,
    alerts_enabled BOOLEAN NOT NULL,
    alert_thresholds VARCHAR[],
    disagreement_margin DOUBLE,
    source_file VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.model_registry IS
    'The model registry (one human-authored, validated YAML file per model, folder [models] dir), as written by the last refresh_compute: what no cluster can know (provider, parameters, architecture, licence, modalities, dates, base models) and the join keys to training runs (lineage job names, Kubernetes namespaces). Replaced whole by each refresh.';
COMMENT ON COLUMN core.model_registry.model_name IS 'The model''s name (= annex_trainingRun.modelName of its runs).';
COMMENT ON COLUMN core.model_registry.provider IS 'The provider (legal name).';
COMMENT ON COLUMN core.model_registry.versions IS 'Versioned names of the model.';
COMMENT ON COLUMN core.model_registry.parameters IS 'Total parameters.';
COMMENT ON COLUMN core.model_registry.active_parameters IS 'Active parameters per token (mixtures of experts); NULL for dense models.';
COMMENT ON COLUMN core.model_registry.architecture IS 'Architecture as the provider describes it.';
COMMENT ON COLUMN core.model_registry.licence IS 'Licence (SPDX identifier or LicenseRef).';
COMMENT ON COLUMN core.model_registry.input_modalities IS 'Input modalities (text, code, image, audio, video, protein, other).';
COMMENT ON COLUMN core.model_registry.output_modalities IS 'Output modalities.';
COMMENT ON COLUMN core.model_registry.generative IS 'The model generates text, audio, images or video: the 10^23 FLOP indicative GPAI criterion applies.';
COMMENT ON COLUMN core.model_registry.release_date IS 'Release date.';
COMMENT ON COLUMN core.model_registry.eu_market_date IS 'Date placed on the EU market.';
COMMENT ON COLUMN core.model_registry.base_models IS 'Registry names of the models this one modifies (fine-tunes, continues).';
COMMENT ON COLUMN core.model_registry.reported_compute_flop IS 'Training compute stated in the file, for a model trained outside annex''s clusters (a base model downloaded).';
COMMENT ON COLUMN core.model_registry.lineage_jobs IS 'OpenLineage job names that belong to the model: a run belongs when its own job or its parent run''s job (the campaign) is listed.';
COMMENT ON COLUMN core.model_registry.namespaces IS 'Kubernetes namespaces its runs may use; a run elsewhere is flagged (training_run_compute.namespace_in_registry).';
COMMENT ON COLUMN core.model_registry.training_dtype IS 'Data type of training (bf16, fp16, fp8, tf32, fp32): selects the dense peak of the hardware method.';
COMMENT ON COLUMN core.model_registry.plan_end IS 'Planned end of training (UTC): running jobs are projected to it.';
COMMENT ON COLUMN core.model_registry.alerts_enabled IS 'Threshold alerts are raised for this model.';
COMMENT ON COLUMN core.model_registry.alert_thresholds IS 'Which thresholds alert: gpai, systemic_risk, modification.';
COMMENT ON COLUMN core.model_registry.disagreement_margin IS 'This model''s margin for the hardware/architecture disagreement flag; NULL: the [compute] default.';
COMMENT ON COLUMN core.model_registry.source_file IS 'The YAML file it came from.';
COMMENT ON COLUMN core.model_registry.loaded_at IS 'When refresh_compute wrote it (UTC).';

CREATE TABLE marts.training_run_compute (
    run_id VARCHAR NOT NULL PRIMARY KEY,
    model_name VARCHAR NOT NULL,
    attributed_by VARCHAR NOT NULL,
    lineage_model_name VARCHAR,
    stage VARCHAR NOT NULL,
    state VARCHAR,
    running BOOLEAN NOT NULL,
    started_at TIMESTAMP,
    ended_at TIMESTAMP,
    kubernetes_cluster VARCHAR,
    kubernetes_namespace VARCHAR,
    kubernetes_job_name VARCHAR,
    namespace_in_registry BOOLEAN,
    gpus BIGINT NOT NULL,
    open_gpus BIGINT NOT NULL,
    gpu_hours DOUBLE,
    first_allocation_at TIMESTAMP,
    last_allocation_at TIMESTAMP,
    wall_clock_seconds DOUBLE,
    wall_clock_source VARCHAR,
    hardware_days DOUBLE,
    utilisation DOUBLE,
    utilisation_source VARCHAR,
    telemetry_coverage DOUBLE,
    hardware_flop DOUBLE,
    hardware_flop_low DOUBLE,
    hardware_flop_high DOUBLE,
    parameters BIGINT,
    tokens DOUBLE,
    flop_per_parameter_token INTEGER,
    architecture_flop DOUBLE,
    architecture_flop_low DOUBLE,
    architecture_flop_high DOUBLE,
    disagreement DOUBLE,
    disagreement_margin DOUBLE,
    disagreement_flagged BOOLEAN,
    compute_flop DOUBLE,
    compute_flop_low DOUBLE,
    compute_flop_high DOUBLE,
    compute_method VARCHAR,
    measured_gpu_joules DOUBLE,
    energy_coverage DOUBLE,
    energy_measured_mwh DOUBLE,
    energy_measured_mwh_low DOUBLE,
    energy_measured_mwh_high DOUBLE,
    energy_estimated_mwh DOUBLE,
    energy_estimated_mwh_low DOUBLE,
    energy_estimated_mwh_high DOUBLE,
    rate_flop_per_s DOUBLE,
    planned_remaining_flop DOUBLE,
    gaps VARCHAR[],
    evidence_pod_uids VARCHAR[],
    evidence_gpu_uuids VARCHAR[],
    evidence_event_ids VARCHAR[],
    evidence_benchmark_ids VARCHAR[],
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.training_run_compute IS
    'Training compute, time and energy per training run (Annex XI 2(d)-(e), MDF sections 7-8): every lineage run of stage PRETRAINING, FINE_TUNING or SYNTHETIC_GENERATION, joined through its annex_trainingRun.kubernetes facet to the Job''s GPU intervals, their telemetry and benchmarks. Both compute methods with their bands, both energy methods, the gaps disclosed and the evidence ids. Rebuilt whole by refresh_compute.';
COMMENT ON COLUMN marts.training_run_compute.run_id IS 'The training run (core.lineage_runs.run_id).';
COMMENT ON COLUMN marts.training_run_compute.model_name IS 'The model the compute counts toward: the registry model whose lineage_jobs list the run''s job or its parent''s job, else the run''s annex_trainingRun.modelName.';
COMMENT ON COLUMN marts.training_run_compute.attributed_by IS 'registry_job (matched by the registry''s lineage_jobs) or run_model_name (annex_trainingRun.modelName; no registry job matched).';
COMMENT ON COLUMN marts.training_run_compute.lineage_model_name IS 'annex_trainingRun.modelName of the run (for synthetic-data generation: the generator model).';
COMMENT ON COLUMN marts.training_run_compute.stage IS 'PRETRAINING, FINE_TUNING or SYNTHETIC_GENERATION (evaluation and data processing add no capability and are left out).';
COMMENT ON COLUMN marts.training_run_compute.state IS 'The run''s state by event time.';
COMMENT ON COLUMN marts.training_run_compute.running IS 'No terminal event (COMPLETE, FAIL, ABORT) yet.';
COMMENT ON COLUMN marts.training_run_compute.started_at IS 'Earliest START of the run (UTC).';
COMMENT ON COLUMN marts.training_run_compute.ended_at IS 'Its terminal event (UTC); NULL while running.';
COMMENT ON COLUMN marts.training_run_compute.kubernetes_cluster IS 'annex_trainingRun.kubernetes.cluster.';
COMMENT ON COLUMN marts.training_run_compute.kubernetes_namespace IS 'annex_trainingRun.kubernetes.namespace.';
COMMENT ON COLUMN marts.training_run_compute.kubernetes_job_name IS 'annex_trainingRun.kubernetes.jobName.';
COMMENT ON COLUMN marts.training_run_compute.namespace_in_registry IS 'The Job''s namespace is one the registry lists for the model; NULL when the registry lists none or has no file for the model.';
COMMENT ON COLUMN marts.training_run_compute.gpus IS 'Σ gpus over the Job''s pods'' allocation intervals (one pod''s holding counted once per interval).';
COMMENT ON COLUMN marts.training_run_compute.open_gpus IS 'Whole GPUs its pods hold now (open allocation intervals): the rate of a running job.';
COMMENT ON COLUMN marts.training_run_compute.gpu_hours IS 'Σ gpus × held seconds / 3600 over the Job''s pods (core.gpu_allocations, nvidia.com/gpu, open intervals up to the refresh); NULL when the inventory has no holdings for the Job. Exact to the intervals; intervals whose end was inferred (the pod was gone at the next collection) are disclosed in gaps.';
COMMENT ON COLUMN marts.training_run_compute.first_allocation_at IS 'Earliest valid_from of its holdings (UTC).';
COMMENT ON COLUMN marts.training_run_compute.last_allocation_at IS 'Latest valid_to of its holdings, the refresh time for open ones (UTC).';
COMMENT ON COLUMN marts.training_run_compute.wall_clock_seconds IS 'Wall-clock training time: last − first allocation when the inventory has holdings, else ended_at (or the refresh time) − started_at of the lineage run.';
COMMENT ON COLUMN marts.training_run_compute.wall_clock_source IS 'allocations or lineage: which span wall_clock_seconds measures.';
COMMENT ON COLUMN marts.training_run_compute.hardware_days IS 'gpu_hours / 24.';
COMMENT ON COLUMN marts.training_run_compute.utilisation IS 'Utilisation of dense peak used by the hardware method (GPU-hour weighted over its GPU models; see training_run_gpus).';
COMMENT ON COLUMN marts.training_run_compute.utilisation_source IS 'telemetry_tensor_active, benchmark_calibrated or assumed_default (the [compute] default_mfu); mixed when its GPU models differ.';
COMMENT ON COLUMN marts.training_run_compute.telemetry_coverage IS 'Share (0-1) of gpu_hours that DCGM telemetry (marts.gpu_hourly, by pod label) covers; the rest is a disclosed gap.';
COMMENT ON COLUMN marts.training_run_compute.hardware_flop IS 'Hardware-based compute: Σ over GPU models of GPU-seconds × dense peak FLOP/s for training_dtype × utilisation; NULL without holdings or a peak.';
COMMENT ON COLUMN marts.training_run_compute.hardware_flop_low IS 'Low end of the uncertainty band of hardware_flop.';
COMMENT ON COLUMN marts.training_run_compute.hardware_flop_high IS 'High end of the uncertainty band of hardware_flop.';
COMMENT ON COLUMN marts.training_run_compute.parameters IS 'N of the architecture method: active (else total) parameters of the registry model (for generation: of the generator, lineage_model_name).';
COMMENT ON COLUMN marts.training_run_compute.tokens IS 'D: Σ annex_trainingUsage.tokensConsumed of its inputs (training), or Σ annex_content.size.tokens of its outputs (generation: the tokens generated).';
COMMENT ON COLUMN marts.training_run_compute.flop_per_parameter_token IS '6 for training, 2 for generation (forward passes only).';
COMMENT ON COLUMN marts.training_run_compute.architecture_flop IS 'Architecture-based compute: flop_per_parameter_token × parameters × tokens; NULL without both.';
COMMENT ON COLUMN marts.training_run_compute.architecture_flop_low IS 'Low end of the uncertainty band of architecture_flop.';
COMMENT ON COLUMN marts.training_run_compute.architecture_flop_high IS 'High end of the uncertainty band of architecture_flop.';
COMMENT ON COLUMN marts.training_run_compute.disagreement IS '|hardware_flop − architecture_flop| / architecture_flop; NULL while running (compute so far against a plan).';
COMMENT ON COLUMN marts.training_run_compute.disagreement_margin IS 'The margin it is compared with (the model''s, else [compute] disagreement_margin).';
COMMENT ON COLUMN marts.training_run_compute.disagreement_flagged IS 'disagreement > disagreement_margin: the two methods disagree beyond the accepted error.';
COMMENT ON COLUMN marts.training_run_compute.compute_flop IS 'The compute of record: the larger of the two estimates (conservative while they disagree); for a running run the hardware-based compute so far only (its token counts are a plan, see planned_remaining_flop).';
COMMENT ON COLUMN marts.training_run_compute.compute_flop_low IS 'Low end of the uncertainty band of compute_flop.';
COMMENT ON COLUMN marts.training_run_compute.compute_flop_high IS 'High end of the uncertainty band of compute_flop.';
COMMENT ON COLUMN marts.training_run_compute.compute_method IS 'hardware or architecture: which estimate compute_flop is.';
COMMENT ON COLUMN marts.training_run_compute.measured_gpu_joules IS 'GPU energy from DCGM over the covered GPU-hours: the energy counter (resets handled in marts.gpu_hourly), else power × time, weighted by the pod-label share.';
COMMENT ON COLUMN marts.training_run_compute.energy_coverage IS 'Share (0-1) of gpu_hours with a DCGM energy or power reading.';
COMMENT ON COLUMN marts.training_run_compute.energy_measured_mwh IS 'Measured energy (facility): (measured_gpu_joules + TDP × power fraction × the uncovered GPU-seconds) × server overhead × PUE / 3.6e9.';
COMMENT ON COLUMN marts.training_run_compute.energy_measured_mwh_low IS 'Low end of the uncertainty band of energy_measured_mwh.';
COMMENT ON COLUMN marts.training_run_compute.energy_measured_mwh_high IS 'High end of the uncertainty band of energy_measured_mwh.';
COMMENT ON COLUMN marts.training_run_compute.energy_estimated_mwh IS 'Estimated energy (TDP fallback): gpu_hours × TDP[kW] × power fraction × server overhead × PUE / 1000.';
COMMENT ON COLUMN marts.training_run_compute.energy_estimated_mwh_low IS 'Low end of the uncertainty band of energy_estimated_mwh.';
COMMENT ON COLUMN marts.training_run_compute.energy_estimated_mwh_high IS 'High end of the uncertainty band of energy_estimated_mwh.';
COMMENT ON COLUMN marts.training_run_compute.rate_flop_per_s IS 'Current compute rate of a running run: open_gpus × dense peak × utilisation; 0 otherwise.';
COMMENT ON COLUMN marts.training_run_compute.planned_remaining_flop IS 'For a running run: architecture_flop (the tokens its START facets plan to consume) minus the compute of record so far, at least 0; NULL when not running or without a plan. Counted in model_compute.planned_compute_flop, not in compute_flop.';
COMMENT ON COLUMN marts.training_run_compute.gaps IS 'What is missing behind these figures, in words (no holdings, no telemetry for a share, no peak for a GPU model, no tokens, no registry file).';
COMMENT ON COLUMN marts.training_run_compute.evidence_pod_uids IS 'Pods whose allocation intervals gave gpu_hours (core.gpu_allocations.pod_uid).';
COMMENT ON COLUMN marts.training_run_compute.evidence_gpu_uuids IS 'GPUs whose telemetry gave utilisation and energy (marts.gpu_hourly.gpu_uuid).';
COMMENT ON COLUMN marts.training_run_compute.evidence_event_ids IS 'Lineage events behind the run''s state and token counts (core.lineage_events.event_id).';
COMMENT ON COLUMN marts.training_run_compute.evidence_benchmark_ids IS 'Benchmark records behind a benchmark-calibrated utilisation (core.gpu_benchmarks.record_id).';
COMMENT ON COLUMN marts.training_run_compute.refreshed_at IS 'When refresh_compute wrote the row (UTC).';

CREATE TABLE marts.training_run_gpus (
    run_id VARCHAR NOT NULL,
    model_name VARCHAR NOT NULL,
    gpu_product VARCHAR NOT NULL,
    gpu_sku VARCHAR,
    gpu_hours DOUBLE NOT NULL,
    open_gpus BIGINT NOT NULL,
    peak_tflops_dense DOUBLE,
    tdp_watts DOUBLE,
    telemetry_gpu_hours DOUBLE NOT NULL,
    tensor_active DOUBLE,
    busy DOUBLE,
    benchmark_frac_peak DOUBLE,
    utilisation DOUBLE,
    utilisation_source VARCHAR NOT NULL,
    hardware_flop DOUBLE,
    hardware_flop_low DOUBLE,
    hardware_flop_high DOUBLE,
    measured_gpu_joules DOUBLE NOT NULL,
    energy_gpu_hours DOUBLE NOT NULL,
    refreshed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, gpu_product)
);

COMMENT ON TABLE marts.training_run_gpus IS
    'Per training run and GPU model: GPU-hours, the dense peak and utilisation used, and the hardware-based compute (the detail behind marts.training_run_compute). Rebuilt by refresh_compute.';
COMMENT ON COLUMN marts.training_run_gpus.run_id IS 'The training run.';
COMMENT ON COLUMN marts.training_run_gpus.model_name IS 'The model it counts toward.';
COMMENT ON COLUMN marts.training_run_gpus.gpu_product IS 'GPU model of the nodes (GFD nvidia.com/gpu.product of the node version when the holding began; unknown when unlabelled).';
COMMENT ON COLUMN marts.training_run_gpus.gpu_sku IS 'SKU annex matched for it (probes/gpubench/peaks.py); NULL when annex has no peak for the model.';
COMMENT ON COLUMN marts.training_run_gpus.gpu_hours IS 'Whole-GPU hours held on this GPU model.';
COMMENT ON COLUMN marts.training_run_gpus.open_gpus IS 'GPUs held now.';
COMMENT ON COLUMN marts.training_run_gpus.peak_tflops_dense IS 'Dense peak TFLOP/s for the training dtype (core.gpu_peak_reference, else annex''s built-in table).';
COMMENT ON COLUMN marts.training_run_gpus.tdp_watts IS 'TDP of the SKU (the energy fallback).';
COMMENT ON COLUMN marts.training_run_gpus.telemetry_gpu_hours IS 'GPU-hours of marts.gpu_hourly whose pod label is one of the run''s pods on these nodes, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.training_run_gpus.tensor_active IS 'Mean tensor_active over those GPU-hours (weighted).';
COMMENT ON COLUMN marts.training_run_gpus.busy IS 'Mean busy over those GPU-hours (weighted).';
COMMENT ON COLUMN marts.training_run_gpus.benchmark_frac_peak IS 'Median frac_peak_flops of correct GEMM benchmarks of the training dtype on the run''s nodes (else on the SKU fleet-wide).';
COMMENT ON COLUMN marts.training_run_gpus.utilisation IS 'Utilisation used: tensor_active, else busy × benchmark_frac_peak, else the default MFU.';
COMMENT ON COLUMN marts.training_run_gpus.utilisation_source IS 'telemetry_tensor_active, benchmark_calibrated or assumed_default.';
COMMENT ON COLUMN marts.training_run_gpus.hardware_flop IS 'GPU-seconds × peak × utilisation; NULL without a peak.';
COMMENT ON COLUMN marts.training_run_gpus.hardware_flop_low IS 'Low end of the uncertainty band of hardware_flop.';
COMMENT ON COLUMN marts.training_run_gpus.hardware_flop_high IS 'High end of the uncertainty band of hardware_flop.';
COMMENT ON COLUMN marts.training_run_gpus.measured_gpu_joules IS 'DCGM energy over the covered GPU-hours (counter, else power × time), weighted.';
COMMENT ON COLUMN marts.training_run_gpus.energy_gpu_hours IS 'GPU-hours with an energy reading.';
COMMENT ON COLUMN marts.training_run_gpus.refreshed_at IS 'When refresh_compute wrote the row (UTC).';

CREATE TABLE marts.model_compute (
    model_name VARCHAR NOT NULL PRIMARY KEY,
    in_registry BOOLEAN NOT NULL,
    provider VARCHAR,
    parameters BIGINT,
    base_models VARCHAR[],
    runs INTEGER NOT NULL,
    running_runs INTEGER NOT NULL,
    stages VARCHAR[],
    gpu_hours DOUBLE NOT NULL,
    wall_clock_seconds DOUBLE,
    wall_clock_days DOUBLE,
    hardware_days DOUBLE NOT NULL,
    time_band VARCHAR,
    hardware_flop DOUBLE,
    hardware_flop_low DOUBLE,
    hardware_flop_high DOUBLE,
    architecture_flop DOUBLE,
    architecture_flop_low DOUBLE,
    architecture_flop_high DOUBLE,
    disagreement DOUBLE,
    disagreement_flagged BOOLEAN,
    own_compute_flop DOUBLE,
    own_compute_flop_low DOUBLE,
    own_compute_flop_high DOUBLE,
    base_compute_flop DOUBLE,
    cumulative_compute_flop DOUBLE,
    cumulative_compute_flop_low DOUBLE,
    cumulative_compute_flop_high DOUBLE,
    compute_methods VARCHAR[],
    measured_gpu_joules DOUBLE NOT NULL,
    energy_coverage DOUBLE,
    energy_measured_mwh DOUBLE,
    energy_measured_mwh_low DOUBLE,
    energy_measured_mwh_high DOUBLE,
    energy_measured_mwh_rounded DOUBLE,
    energy_measured_method VARCHAR,
    energy_estimated_mwh DOUBLE,
    energy_estimated_mwh_low DOUBLE,
    energy_estimated_mwh_high DOUBLE,
    energy_estimated_mwh_rounded DOUBLE,
    energy_estimated_method VARCHAR,
    rate_flop_per_s DOUBLE NOT NULL,
    plan_end TIMESTAMP,
    projected_compute_flop DOUBLE,
    planned_compute_flop DOUBLE,
    gaps VARCHAR[],
    evidence_run_ids VARCHAR[],
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.model_compute IS
    'Training compute, time and energy per model, cumulative over all its training runs and stages (pre-training, fine-tuning, synthetic-data generation), with its base models'' compute for a modification: the figures of Annex XI 2(d)-(e) and MDF sections 7-8, each with its band, method and the gaps. Rebuilt by refresh_compute.';
COMMENT ON COLUMN marts.model_compute.model_name IS 'The model (registry name, or annex_trainingRun.modelName for models without a file).';
COMMENT ON COLUMN marts.model_compute.in_registry IS 'The registry has a file for it (parameters, base models, plan and alerts need one).';
COMMENT ON COLUMN marts.model_compute.provider IS 'Provider from the registry.';
COMMENT ON COLUMN marts.model_compute.parameters IS 'Total parameters from the registry.';
COMMENT ON COLUMN marts.model_compute.base_models IS 'Models it modifies (registry).';
COMMENT ON COLUMN marts.model_compute.runs IS 'Training runs counted (all stages).';
COMMENT ON COLUMN marts.model_compute.running_runs IS 'Of those, still running.';
COMMENT ON COLUMN marts.model_compute.stages IS 'Stages its runs cover.';
COMMENT ON COLUMN marts.model_compute.gpu_hours IS 'Σ gpu_hours of its runs.';
COMMENT ON COLUMN marts.model_compute.wall_clock_seconds IS 'Wall-clock training time: the union of its runs'' spans (overlapping runs counted once).';
COMMENT ON COLUMN marts.model_compute.wall_clock_days IS 'wall_clock_seconds / 86400 (MDF 7, AI Office answer).';
COMMENT ON COLUMN marts.model_compute.hardware_days IS 'gpu_hours / 24.';
COMMENT ON COLUMN marts.model_compute.time_band IS 'The Code of Practice''s range bin for training time (NCA answer): <1 month, 1-3 months, 3-6 months, >6 months (months of 30.44 days).';
COMMENT ON COLUMN marts.model_compute.hardware_flop IS 'Σ hardware-based compute of its runs (runs without an estimate add nothing).';
COMMENT ON COLUMN marts.model_compute.hardware_flop_low IS 'Low end of the uncertainty band of hardware_flop.';
COMMENT ON COLUMN marts.model_compute.hardware_flop_high IS 'High end of the uncertainty band of hardware_flop.';
COMMENT ON COLUMN marts.model_compute.architecture_flop IS 'Σ architecture-based compute of its finished runs (a running run''s tokens are a plan: planned_compute_flop).';
COMMENT ON COLUMN marts.model_compute.architecture_flop_low IS 'Low end of the uncertainty band of architecture_flop.';
COMMENT ON COLUMN marts.model_compute.architecture_flop_high IS 'High end of the uncertainty band of architecture_flop.';
COMMENT ON COLUMN marts.model_compute.disagreement IS '|hardware − architecture| / architecture over the runs that have both.';
COMMENT ON COLUMN marts.model_compute.disagreement_flagged IS 'Beyond the model''s margin.';
COMMENT ON COLUMN marts.model_compute.own_compute_flop IS 'Σ compute of record of its own runs (all stages).';
COMMENT ON COLUMN marts.model_compute.own_compute_flop_low IS 'Low end of the uncertainty band of own_compute_flop.';
COMMENT ON COLUMN marts.model_compute.own_compute_flop_high IS 'High end of the uncertainty band of own_compute_flop.';
COMMENT ON COLUMN marts.model_compute.base_compute_flop IS 'Σ cumulative compute of its base models (their runs here, else their reported_compute_flop); NULL when a base model''s compute is unknown.';
COMMENT ON COLUMN marts.model_compute.cumulative_compute_flop IS 'own_compute_flop + base_compute_flop (known part; the base models'' compute added as a point figure): compute accumulates over the model''s lifecycle (Guidelines).';
COMMENT ON COLUMN marts.model_compute.cumulative_compute_flop_low IS 'Low end of the uncertainty band of cumulative_compute_flop.';
COMMENT ON COLUMN marts.model_compute.cumulative_compute_flop_high IS 'High end of the uncertainty band of cumulative_compute_flop.';
COMMENT ON COLUMN marts.model_compute.compute_methods IS 'Methods behind own_compute_flop (hardware, architecture).';
COMMENT ON COLUMN marts.model_compute.measured_gpu_joules IS 'Σ measured GPU joules of its runs.';
COMMENT ON COLUMN marts.model_compute.energy_coverage IS 'Share of gpu_hours with a DCGM energy reading.';
COMMENT ON COLUMN marts.model_compute.energy_measured_mwh IS 'Σ measured energy of its runs, MWh (facility: server overhead and PUE applied).';
COMMENT ON COLUMN marts.model_compute.energy_measured_mwh_low IS 'Low end of the uncertainty band of energy_measured_mwh.';
COMMENT ON COLUMN marts.model_compute.energy_measured_mwh_high IS 'High end of the uncertainty band of energy_measured_mwh.';
COMMENT ON COLUMN marts.model_compute.energy_measured_mwh_rounded IS 'energy_measured_mwh to 3 significant figures (MDF 8: at least 2).';
COMMENT ON COLUMN marts.model_compute.energy_measured_method IS 'How energy_measured_mwh was obtained, in words (counters, coverage, factors).';
COMMENT ON COLUMN marts.model_compute.energy_estimated_mwh IS 'Σ estimated (TDP-based) energy of its runs, MWh.';
COMMENT ON COLUMN marts.model_compute.energy_estimated_mwh_low IS 'Low end of the uncertainty band of energy_estimated_mwh.';
COMMENT ON COLUMN marts.model_compute.energy_estimated_mwh_high IS 'High end of the uncertainty band of energy_estimated_mwh.';
COMMENT ON COLUMN marts.model_compute.energy_estimated_mwh_rounded IS 'energy_estimated_mwh to 3 significant figures.';
COMMENT ON COLUMN marts.model_compute.energy_estimated_method IS 'How energy_estimated_mwh was obtained, in words.';
COMMENT ON COLUMN marts.model_compute.rate_flop_per_s IS 'Σ current compute rate of its running runs.';
COMMENT ON COLUMN marts.model_compute.plan_end IS 'Planned end of training (registry).';
COMMENT ON COLUMN marts.model_compute.projected_compute_flop IS 'cumulative_compute_flop + rate_flop_per_s × time to plan_end; NULL without a plan.';
COMMENT ON COLUMN marts.model_compute.planned_compute_flop IS 'cumulative_compute_flop + Σ planned_remaining_flop of its running runs: where the running runs'' token plans take it; NULL when none has a plan.';
COMMENT ON COLUMN marts.model_compute.gaps IS 'What is missing behind the figures (from its runs and the registry).';
COMMENT ON COLUMN marts.model_compute.evidence_run_ids IS 'Its runs (marts.training_run_compute).';
COMMENT ON COLUMN marts.model_compute.refreshed_at IS 'When refresh_compute wrote the row (UTC).';

CREATE TABLE marts.model_compute_thresholds (
    model_name VARCHAR NOT NULL,
    threshold VARCHAR NOT NULL,
    threshold_flop DOUBLE NOT NULL,
    threshold_basis VARCHAR NOT NULL,
    compared_flop DOUBLE NOT NULL,
    compared_flop_high DOUBLE NOT NULL,
    applies BOOLEAN NOT NULL,
    status VARCHAR NOT NULL,
    crossed_at TIMESTAMP,
    projected_crossing_at TIMESTAMP,
    projection_basis VARCHAR,
    learned_at TIMESTAMP,
    notification_due TIMESTAMP,
    alert_enabled BOOLEAN NOT NULL,
    alert BOOLEAN NOT NULL,
    refreshed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (model_name, threshold)
);

COMMENT ON TABLE marts.model_compute_thresholds IS
    'Article 51 thresholds per model: cumulative compute against 10^23 FLOP (indicative GPAI criterion, generative models) and 10^25 FLOP (systemic-risk presumption), and a modification''s own compute against one third of its base models'' compute; the date each was crossed or is projected to be crossed by the running jobs, and the two-week notification deadline. Rebuilt by refresh_compute; alerts are recorded in audit.compute_alerts.';
COMMENT ON COLUMN marts.model_compute_thresholds.model_name IS 'The model.';
COMMENT ON COLUMN marts.model_compute_thresholds.threshold IS 'gpai, systemic_risk or modification.';
COMMENT ON COLUMN marts.model_compute_thresholds.threshold_flop IS 'The threshold in FLOP: 1e23, 1e25, or base compute / 3 (10^23/3 when the base''s compute is unknown).';
COMMENT ON COLUMN marts.model_compute_thresholds.threshold_basis IS 'What the threshold is and where it comes from, in words.';
COMMENT ON COLUMN marts.model_compute_thresholds.compared_flop IS 'The compute compared: cumulative_compute_flop (own_compute_flop for modification).';
COMMENT ON COLUMN marts.model_compute_thresholds.compared_flop_high IS 'High end of its band: crossing within the band is flagged by status within_band.';
COMMENT ON COLUMN marts.model_compute_thresholds.applies IS 'The threshold applies (gpai: generative models; modification: models with base models).';
COMMENT ON COLUMN marts.model_compute_thresholds.status IS 'crossed, projected (running jobs reach it before plan_end), within_band (below, but the band''s high end reaches it), below or not_applicable.';
COMMENT ON COLUMN marts.model_compute_thresholds.crossed_at IS 'When cumulative compute reached it (runs'' compute accrued linearly over their spans; UTC).';
COMMENT ON COLUMN marts.model_compute_thresholds.projected_crossing_at IS 'When the running jobs at their current rate reach it (UTC).';
COMMENT ON COLUMN marts.model_compute_thresholds.projection_basis IS 'Why status is projected: rate_to_plan_end (the running jobs'' current rate reaches it before the registry''s plan end) or planned_tokens (the running runs'' token plans reach it: planned_compute_flop); NULL otherwise.';
COMMENT ON COLUMN marts.model_compute_thresholds.learned_at IS 'For a projection by planned_tokens: when annex first learned the threshold will be met (the earliest audit.compute_alerts record of it, else this refresh), from which the notification deadline runs.';
COMMENT ON COLUMN marts.model_compute_thresholds.notification_due IS 'crossed_at (else projected_crossing_at, else learned_at) + 14 days: the Art 52(1) deadline to notify the Commission (within two weeks of meeting the threshold or learning it will be met).';
COMMENT ON COLUMN marts.model_compute_thresholds.alert_enabled IS 'The registry asks for alerts on this threshold (models without a file: all).';
COMMENT ON COLUMN marts.model_compute_thresholds.alert IS 'alert_enabled and status crossed or projected: a notification obligation to act on.';
COMMENT ON COLUMN marts.model_compute_thresholds.refreshed_at IS 'When refresh_compute wrote the row (UTC).';

CREATE TABLE audit.compute_refreshes (
    refreshed_at TIMESTAMP NOT NULL,
    registry_models INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    models INTEGER NOT NULL,
    alerts INTEGER NOT NULL,
    config JSON NOT NULL
);

COMMENT ON TABLE audit.compute_refreshes IS
    'One row per refresh_compute: what it read and wrote, and the configuration its figures used.';
COMMENT ON COLUMN audit.compute_refreshes.refreshed_at IS 'When it ran (UTC); also the now of open intervals and projections.';
COMMENT ON COLUMN audit.compute_refreshes.registry_models IS 'Models in the registry.';
COMMENT ON COLUMN audit.compute_refreshes.runs IS 'Rows written to marts.training_run_compute.';
COMMENT ON COLUMN audit.compute_refreshes.models IS 'Rows written to marts.model_compute.';
COMMENT ON COLUMN audit.compute_refreshes.alerts IS 'Threshold rows with alert.';
COMMENT ON COLUMN audit.compute_refreshes.config IS 'The [compute] settings applied (PUE, server overhead, power fraction, default MFU, margin).';

CREATE TABLE audit.compute_alerts (
    model_name VARCHAR NOT NULL,
    threshold VARCHAR NOT NULL,
    day DATE NOT NULL,
    status VARCHAR NOT NULL,
    threshold_flop DOUBLE NOT NULL,
    compared_flop DOUBLE NOT NULL,
    crossed_at TIMESTAMP,
    projected_crossing_at TIMESTAMP,
    notification_due TIMESTAMP,
    raised_at TIMESTAMP NOT NULL,
    raised_by VARCHAR NOT NULL,
    PRIMARY KEY (model_name, threshold, day)
);

COMMENT ON TABLE audit.compute_alerts IS
    'Threshold alerts raised (Dagster sensor and asset check, or annex compute --record-alerts): one row per model, threshold and UTC day, so re-raising the same alert the same day changes nothing. The evidence that the provider learned a threshold would be met, and when.';
COMMENT ON COLUMN audit.compute_alerts.model_name IS 'The model.';
COMMENT ON COLUMN audit.compute_alerts.threshold IS 'gpai, systemic_risk or modification.';
COMMENT ON COLUMN audit.compute_alerts.day IS 'UTC day the alert was raised.';
COMMENT ON COLUMN audit.compute_alerts.status IS 'crossed or projected, as marts.model_compute_thresholds said.';
COMMENT ON COLUMN audit.compute_alerts.threshold_flop IS 'The threshold.';
COMMENT ON COLUMN audit.compute_alerts.compared_flop IS 'The compute compared at the time.';
COMMENT ON COLUMN audit.compute_alerts.crossed_at IS 'When it was crossed (UTC).';
COMMENT ON COLUMN audit.compute_alerts.projected_crossing_at IS 'When it was projected to be crossed (UTC).';
COMMENT ON COLUMN audit.compute_alerts.notification_due IS 'The notification deadline (UTC).';
COMMENT ON COLUMN audit.compute_alerts.raised_at IS 'When the alert was first recorded that day (UTC).';
COMMENT ON COLUMN audit.compute_alerts.raised_by IS 'What raised it: the Dagster run id, or cli.';

CREATE VIEW marts.model_gpu_hours AS
SELECT model_name, gpu_product, any_value(gpu_sku) AS gpu_sku, sum(gpu_hours) AS gpu_hours,
       sum(gpu_hours) / 24 AS hardware_days, count(DISTINCT run_id) AS runs
FROM marts.training_run_gpus
GROUP BY model_name, gpu_product;

COMMENT ON VIEW marts.model_gpu_hours IS
    'GPU-hours per model and GPU model (own runs; MDF 7 hardware), from marts.training_run_gpus.';
COMMENT ON COLUMN marts.model_gpu_hours.model_name IS 'The model.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_product IS 'GPU model of the nodes (GFD nvidia.com/gpu.product).';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_sku IS 'SKU annex matched; NULL when it has no peak for it.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_hours IS 'Whole-GPU hours its runs held on that GPU model.';
COMMENT ON COLUMN marts.model_gpu_hours.hardware_days IS 'gpu_hours / 24.';
COMMENT ON COLUMN marts.model_gpu_hours.runs IS 'Runs that used that GPU model.';
