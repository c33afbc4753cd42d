-- 0018 figures an officer can sign (issue 40): which runs count toward a model's compute and
-- why, one claim per Kubernetes Job, the physical maximum of every run, energy whose total is
-- always given (measured where telemetry saw the GPU-hours, estimated for the rest), the
-- compute of record per lifecycle stage, the findings behind them, and thresholds as the law
-- words them (reference eu-ai-act.md §2 and §7; Guidelines C(2025) 5045 points 17, 23, 60-61,
-- ~119, ~122). refresh_compute (warehouse/models/compute.py) fills the new columns and tables.
-- Never edit this file once applied anywhere: add a new migration instead.

ALTER TABLE core.model_registry ADD COLUMN systemic_risk BOOLEAN;
COMMENT ON COLUMN core.model_registry.systemic_risk IS 'The model is a GPAI model with systemic risk (designated, or notified under Art 52): a modification of it whose compute is unknown is measured against 10^25/3 FLOP, not 10^23/3 (Guidelines points 60-61). NULL: not stated.';

ALTER TABLE marts.training_run_compute ADD COLUMN lifecycle_stage VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN purpose VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN counted BOOLEAN;
ALTER TABLE marts.training_run_compute ADD COLUMN exclusion VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN exclusion_basis VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN total_parameters BIGINT;
ALTER TABLE marts.training_run_compute ADD COLUMN declared_gpus BIGINT;
ALTER TABLE marts.training_run_compute ADD COLUMN declared_gpu_product VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN physical_max_flop DOUBLE;
ALTER TABLE marts.training_run_compute ADD COLUMN physical_max_source VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN above_physical_max BOOLEAN;
ALTER TABLE marts.training_run_compute ADD COLUMN methods_ratio DOUBLE;
ALTER TABLE marts.training_run_compute ADD COLUMN compute_method_basis VARCHAR;
ALTER TABLE marts.training_run_compute ADD COLUMN energy_mwh DOUBLE;
ALTER TABLE marts.training_run_compute ADD COLUMN energy_mwh_low DOUBLE;
ALTER TABLE marts.training_run_compute ADD COLUMN energy_mwh_high DOUBLE;
ALTER TABLE marts.training_run_compute ADD COLUMN energy_measured_share DOUBLE;
ALTER TABLE marts.training_run_compute ADD COLUMN energy_method VARCHAR;

COMMENT ON COLUMN marts.training_run_compute.lifecycle_stage IS 'The stage of the model''s lifecycle it is (Guidelines: what cumulative compute counts): pretraining (the large pre-training run that starts the model), continued_pretraining (a PRETRAINING run that reads one of the model''s own checkpoints), fine_tuning, reinforcement_learning (FINE_TUNING with annex_trainingRun.method RL), synthetic_data_generation.';
COMMENT ON COLUMN marts.training_run_compute.purpose IS 'annex_trainingRun.purpose of the run: PRODUCTION (the default), ABLATION, EXPLORATORY or HYPERPARAMETER_SEARCH.';
COMMENT ON COLUMN marts.training_run_compute.counted IS 'The run counts toward its model''s cumulative compute (own_compute_flop, thresholds, energy); false: listed, with exclusion saying why.';
COMMENT ON COLUMN marts.training_run_compute.exclusion IS 'Why a run is not counted: exploratory (ablation, exploratory or hyperparameter-search run that does not feed the final weights, Guidelines para ~122), new_pretraining (a second from-scratch pre-training run: it starts a new model, para ~23), job_claimed (its Kubernetes Job''s GPU-hours belong to another run: marts.compute_findings); NULL when counted.';
COMMENT ON COLUMN marts.training_run_compute.exclusion_basis IS 'The exclusion in words, with its source; NULL when counted.';
COMMENT ON COLUMN marts.training_run_compute.total_parameters IS 'Total parameters of the model whose parameters N is (equal to parameters for a dense model; for a mixture of experts N is the active count and this the total).';
COMMENT ON COLUMN marts.training_run_compute.declared_gpus IS 'GPUs the producer declared for the run (annex_trainingRun.resources.gpuCount): the hardware of a run the inventory never saw (e.g. before annex was deployed); NULL when not declared.';
COMMENT ON COLUMN marts.training_run_compute.declared_gpu_product IS 'The GPU model the producer declared (annex_trainingRun.resources.gpuProduct).';
COMMENT ON COLUMN marts.training_run_compute.physical_max_flop IS 'The most compute the run''s hardware could have delivered: GPU-seconds × dense peak for training_dtype (MFU = 1), from its allocations, else from declared_gpus over its lineage span; NULL when neither is known.';
COMMENT ON COLUMN marts.training_run_compute.physical_max_source IS 'allocations or declared: what physical_max_flop rests on.';
COMMENT ON COLUMN marts.training_run_compute.above_physical_max IS 'The architecture-based figure exceeds physical_max_flop: an error in the inputs (parameters, tokens or the run-to-Job link), a finding in marts.compute_findings; the compute of record then falls back to the hardware method.';
COMMENT ON COLUMN marts.training_run_compute.methods_ratio IS 'hardware_flop / architecture_flop (1 = agreement); NULL while running or without both.';
COMMENT ON COLUMN marts.training_run_compute.compute_method_basis IS 'Why compute_method was chosen, in words.';
COMMENT ON COLUMN marts.training_run_compute.energy_mwh IS 'The energy of record, MWh (facility): energy_measured_mwh for the GPU-hours telemetry saw plus an estimate for the rest (TDP × power fraction × server overhead × PUE per GPU-hour where GPU-hours are known, else from compute at the assumed MFU, Annex XI 2(e)); NULL only without any basis.';
COMMENT ON COLUMN marts.training_run_compute.energy_mwh_low IS 'Low end of the uncertainty band of energy_mwh.';
COMMENT ON COLUMN marts.training_run_compute.energy_mwh_high IS 'High end of the uncertainty band of energy_mwh.';
COMMENT ON COLUMN marts.training_run_compute.energy_measured_share IS 'Share (0-1) of energy_mwh that was measured (integrated DCGM energy); 0 when none was.';
COMMENT ON COLUMN marts.training_run_compute.energy_method IS 'How energy_mwh was obtained, in words (both parts named).';
COMMENT ON COLUMN marts.training_run_compute.energy_measured_mwh IS 'Measured energy (facility): measured_gpu_joules (integrated DCGM energy over the GPU-hours telemetry saw) × server overhead × PUE / 3.6e9; only the measured part, never the total (energy_mwh).';
COMMENT ON COLUMN marts.training_run_compute.compute_flop IS 'The compute of record: the larger of the two estimates (conservative while they disagree), but never an architecture figure above physical_max_flop (then the hardware figure); for a running run the hardware-based compute so far (its token counts are a plan, see planned_remaining_flop).';

COMMENT ON COLUMN marts.training_run_compute.gpu_hours IS 'Σ gpus × held seconds / 3600 over the Job''s pods (core.gpu_allocation_history, nvidia.com/gpu); an open interval counted up to the last time the inventory saw the cluster (its last successful snapshot, or the watch''s last commit), never past the refresh time or [compute] as_of; NULL when the inventory has no holdings for the Job or another run holds its claim. Intervals whose end was inferred (the pod was gone at the next collection) are disclosed in gaps.';

ALTER TABLE marts.training_run_compute ADD COLUMN declared_gpu_hours DOUBLE;
COMMENT ON COLUMN marts.training_run_compute.declared_gpu_hours IS 'For a run the inventory never saw: declared_gpus × its lineage span / 3600 (hardware its producer declared, not observed); NULL otherwise.';
COMMENT ON COLUMN marts.training_run_compute.hardware_days IS '(gpu_hours, else declared_gpu_hours) / 24.';

ALTER TABLE marts.training_run_gpus ADD COLUMN declared BOOLEAN;
ALTER TABLE marts.training_run_gpus ADD COLUMN counted BOOLEAN;
COMMENT ON COLUMN marts.training_run_gpus.declared IS 'The row is hardware the run''s producer declared (annex_trainingRun.resources) for a run the inventory never saw, not observed allocations.';
COMMENT ON COLUMN marts.training_run_gpus.counted IS 'Its run counts toward the model''s compute (marts.training_run_compute.counted).';

CREATE OR REPLACE VIEW marts.model_gpu_hours AS
SELECT model_name, gpu_product, any_value(gpu_sku) AS gpu_sku,
       coalesce(sum(gpu_hours) FILTER (WHERE NOT declared), 0) AS gpu_hours,
       coalesce(sum(gpu_hours) FILTER (WHERE declared), 0) AS declared_gpu_hours,
       sum(gpu_hours) / 24 AS hardware_days, count(DISTINCT run_id) AS runs
FROM marts.training_run_gpus
WHERE counted
GROUP BY model_name, gpu_product;

COMMENT ON VIEW marts.model_gpu_hours IS
    'GPU-hours per model and GPU model over its counted runs (MDF 7 hardware), observed and declared apart, from marts.training_run_gpus.';
COMMENT ON COLUMN marts.model_gpu_hours.model_name IS 'The model.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_product IS 'GPU model of the nodes (GFD nvidia.com/gpu.product), or the one a producer declared.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_sku IS 'SKU annex matched; NULL when it has no peak for it.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_hours IS 'Whole-GPU hours its counted runs held on that GPU model (observed by the inventory).';
COMMENT ON COLUMN marts.model_gpu_hours.declared_gpu_hours IS 'GPU-hours on that GPU model that producers declared for runs the inventory never saw.';
COMMENT ON COLUMN marts.model_gpu_hours.hardware_days IS '(gpu_hours + declared_gpu_hours) / 24.';
COMMENT ON COLUMN marts.model_gpu_hours.runs IS 'Counted runs that used that GPU model.';

ALTER TABLE marts.model_compute ADD COLUMN declared_gpu_hours DOUBLE;
COMMENT ON COLUMN marts.model_compute.declared_gpu_hours IS 'Σ declared_gpu_hours of its counted runs: GPU-hours producers declared for runs the inventory never saw.';
COMMENT ON COLUMN marts.model_compute.hardware_days IS '(gpu_hours + declared_gpu_hours) / 24: the hardware-days of its counted runs, observed and declared (MDF 7).';
COMMENT ON COLUMN marts.model_compute.gpu_hours IS 'Σ gpu_hours of its counted runs (observed by the inventory; declared ones in declared_gpu_hours).';

ALTER TABLE marts.model_compute ADD COLUMN active_parameters BIGINT;
ALTER TABLE marts.model_compute ADD COLUMN excluded_runs INTEGER;
ALTER TABLE marts.model_compute ADD COLUMN excluded_run_ids VARCHAR[];
ALTER TABLE marts.model_compute ADD COLUMN physical_max_flop DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN methods_ratio DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN energy_mwh DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN energy_mwh_low DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN energy_mwh_high DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN energy_mwh_rounded DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN energy_measured_share DOUBLE;
ALTER TABLE marts.model_compute ADD COLUMN energy_method VARCHAR;

COMMENT ON COLUMN marts.model_compute.parameters IS 'Total parameters from the registry (see active_parameters for a mixture of experts).';
COMMENT ON COLUMN marts.model_compute.active_parameters IS 'Active parameters per token (mixture of experts): the N of 6·N·D; NULL for a dense model.';
COMMENT ON COLUMN marts.model_compute.runs IS 'Training runs counted (counted runs of marts.training_run_compute, all stages).';
COMMENT ON COLUMN marts.model_compute.excluded_runs IS 'Runs attributed to the model but not counted (exploratory, a new pre-training run, a Job claimed by another run): marts.training_run_compute.exclusion.';
COMMENT ON COLUMN marts.model_compute.excluded_run_ids IS 'Those runs.';
COMMENT ON COLUMN marts.model_compute.physical_max_flop IS 'Σ physical_max_flop of its counted runs (NULL when one has none): own_compute_flop never exceeds it where all are known.';
COMMENT ON COLUMN marts.model_compute.methods_ratio IS 'hardware / architecture over the counted finished runs that have both (1 = agreement).';
COMMENT ON COLUMN marts.model_compute.energy_mwh IS 'The energy of record, MWh: Σ energy_mwh of its counted runs (measured where telemetry saw the GPU-hours, estimated for the rest); energy_measured_share says how much was measured.';
COMMENT ON COLUMN marts.model_compute.energy_mwh_low IS 'Low end of the uncertainty band of energy_mwh.';
COMMENT ON COLUMN marts.model_compute.energy_mwh_high IS 'High end of the uncertainty band of energy_mwh.';
COMMENT ON COLUMN marts.model_compute.energy_mwh_rounded IS 'energy_mwh to 3 significant figures (MDF 8: at least 2).';
COMMENT ON COLUMN marts.model_compute.energy_measured_share IS 'Share (0-1) of energy_mwh that was measured.';
COMMENT ON COLUMN marts.model_compute.energy_method IS 'How energy_mwh was obtained, in words: both methods named, with the measured share.';
COMMENT ON COLUMN marts.model_compute.energy_measured_mwh IS 'Σ measured energy of its counted runs, MWh (facility): only the GPU-hours telemetry saw; a part of energy_mwh, never the total.';
COMMENT ON COLUMN marts.model_compute.energy_estimated_mwh IS 'Σ TDP-based estimate of its counted runs over all their GPU-hours, MWh: the comparator of the measured part (runs without GPU-hours are estimated from compute in energy_mwh only).';
COMMENT ON COLUMN marts.model_compute.own_compute_flop IS 'Σ compute of record of its counted runs (all stages).';
COMMENT ON COLUMN marts.model_compute.evidence_run_ids IS 'Its counted runs (marts.training_run_compute).';

COMMENT ON COLUMN marts.model_compute_thresholds.applies IS 'The threshold applies: gpai for models that generate language (text or audio output), text-to-image or text-to-video (Guidelines point 17; registry modalities); systemic_risk always; modification for models with base models.';
COMMENT ON COLUMN marts.model_compute_thresholds.threshold_flop IS 'The threshold in FLOP: 1e23, 1e25, or the base models'' compute / 3; when a base''s compute is unknown 10^25/3 for a systemic-risk original, 10^23/3 otherwise (Guidelines points 60-61).';
COMMENT ON COLUMN marts.model_compute_thresholds.status IS 'crossed, projected (the counted runs'' plans or current rate reach it), within_band (below, but the band''s high end reaches it), below or not_applicable.';
COMMENT ON COLUMN marts.model_compute_thresholds.learned_at IS 'When the provider learned the threshold would be met: the recorded time (START event) of the counted run whose plan, added to the compute and plans recorded before it, first reaches it; for a rate projection the start of the latest running run. Evidence times, never when annex ran.';
COMMENT ON COLUMN marts.model_compute_thresholds.notification_due IS 'Art 52(1): 14 days after the earlier of crossed_at and learned_at (else projected_crossing_at); only for thresholds that oblige a notification (systemic_risk; modification of a systemic-risk original). NULL for gpai: crossing 10^23 means GPAI obligations apply and nothing is notified (Guidelines footnote 7).';

ALTER TABLE marts.model_compute_thresholds ADD COLUMN consequence VARCHAR;
COMMENT ON COLUMN marts.model_compute_thresholds.consequence IS 'What the status means for the provider, in words, with its article or Guidelines point.';

CREATE TABLE marts.model_compute_stages (
    model_name VARCHAR NOT NULL,
    lifecycle_stage VARCHAR NOT NULL,
    runs INTEGER NOT NULL,
    running_runs INTEGER NOT NULL,
    gpu_hours DOUBLE NOT NULL,
    hardware_flop DOUBLE,
    architecture_flop DOUBLE,
    methods_ratio DOUBLE,
    compute_flop DOUBLE,
    compute_flop_low DOUBLE,
    compute_flop_high DOUBLE,
    compute_method VARCHAR,
    compute_method_basis VARCHAR,
    physical_max_flop DOUBLE,
    energy_mwh DOUBLE,
    energy_measured_share DOUBLE,
    refreshed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (model_name, lifecycle_stage)
);

COMMENT ON TABLE marts.model_compute_stages IS
    'Per model and lifecycle stage, over its counted runs: both compute methods side by side, their ratio, the compute of record and why, the physical maximum and the energy of record (MDF 7-8 per stage; Guidelines: cumulative compute over pre-training, continued pre-training, fine-tuning, RL and synthetic-data generation). Rebuilt by refresh_compute.';
COMMENT ON COLUMN marts.model_compute_stages.model_name IS 'The model.';
COMMENT ON COLUMN marts.model_compute_stages.lifecycle_stage IS 'pretraining, continued_pretraining, fine_tuning, reinforcement_learning or synthetic_data_generation (marts.training_run_compute.lifecycle_stage).';
COMMENT ON COLUMN marts.model_compute_stages.runs IS 'Counted runs of the stage.';
COMMENT ON COLUMN marts.model_compute_stages.running_runs IS 'Of those, still running.';
COMMENT ON COLUMN marts.model_compute_stages.gpu_hours IS 'Σ gpu_hours of those runs (observed allocations).';
COMMENT ON COLUMN marts.model_compute_stages.hardware_flop IS 'Σ hardware-based compute of those runs.';
COMMENT ON COLUMN marts.model_compute_stages.architecture_flop IS 'Σ architecture-based compute of its finished runs.';
COMMENT ON COLUMN marts.model_compute_stages.methods_ratio IS 'hardware / architecture over the finished runs that have both (1 = agreement; a ratio, not a percentage).';
COMMENT ON COLUMN marts.model_compute_stages.compute_flop IS 'Σ compute of record of those runs.';
COMMENT ON COLUMN marts.model_compute_stages.compute_flop_low IS 'Low end of the uncertainty band of compute_flop.';
COMMENT ON COLUMN marts.model_compute_stages.compute_flop_high IS 'High end of the uncertainty band of compute_flop.';
COMMENT ON COLUMN marts.model_compute_stages.compute_method IS 'hardware, architecture or mixed: the method of record of its runs.';
COMMENT ON COLUMN marts.model_compute_stages.compute_method_basis IS 'Why, in words (each run''s rule, counted).';
COMMENT ON COLUMN marts.model_compute_stages.physical_max_flop IS 'Σ physical_max_flop of its runs; NULL when one has none.';
COMMENT ON COLUMN marts.model_compute_stages.energy_mwh IS 'Σ energy of record of its runs, MWh.';
COMMENT ON COLUMN marts.model_compute_stages.energy_measured_share IS 'Share (0-1) of energy_mwh measured.';
COMMENT ON COLUMN marts.model_compute_stages.refreshed_at IS 'When refresh_compute wrote the row (UTC).';

CREATE TABLE marts.compute_findings (
    model_name VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    severity VARCHAR NOT NULL,
    other_run_id VARCHAR,
    kubernetes_job VARCHAR,
    message VARCHAR NOT NULL,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.compute_findings IS
    'What an officer must see behind the compute figures: a Kubernetes Job claimed by two lineage runs (its GPU-hours counted once), a run credited above its physical maximum, runs listed but not counted (exploratory, a new pre-training run). Rebuilt by refresh_compute.';
COMMENT ON COLUMN marts.compute_findings.model_name IS 'The model the run is attributed to.';
COMMENT ON COLUMN marts.compute_findings.run_id IS 'The run the finding is about.';
COMMENT ON COLUMN marts.compute_findings.kind IS 'job_claimed_twice, above_physical_max, exploratory_run or new_pretraining_run.';
COMMENT ON COLUMN marts.compute_findings.severity IS 'high (a figure would have been wrong: a double claim, a figure above physics) or info (a run listed apart, as the Guidelines allow).';
COMMENT ON COLUMN marts.compute_findings.other_run_id IS 'For job_claimed_twice: the run whose claim was kept.';
COMMENT ON COLUMN marts.compute_findings.kubernetes_job IS 'cluster/namespace/job name (and uid where the inventory knows it) of the Job concerned.';
COMMENT ON COLUMN marts.compute_findings.message IS 'The finding in words: what, the likely cause, and what was done with the figure.';
COMMENT ON COLUMN marts.compute_findings.refreshed_at IS 'When refresh_compute wrote the row (UTC).';
