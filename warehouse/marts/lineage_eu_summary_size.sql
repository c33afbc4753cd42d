-- marts.lineage_eu_summary_size: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_eu_summary_size AS
WITH training_runs AS (
    SELECT DISTINCT s.model_version_id, s.model_name, o.run_id
    FROM (
        SELECT model_version_id, model_name, dataset_version_id FROM marts.lineage_model_sources
        UNION ALL
        SELECT model_version_id, model_name, model_version_id FROM marts.lineage_models
    ) AS s
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = s.dataset_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_runs AS r ON r.run_id = o.run_id
    LEFT JOIN marts.lineage_models AS other ON other.model_version_id = s.dataset_version_id
    WHERE r.stage IN ('PRETRAINING', 'FINE_TUNING')
      AND (other.model_name IS NULL OR other.model_name = s.model_name)
),
consumed AS (
    SELECT
        t.model_version_id,
        t.model_name,
        coalesce(c.facet ->> '$.modality', 'UNKNOWN') AS modality,
        CAST(coalesce(u.facet -> '$.tokensConsumed', c.facet -> '$.size.tokens') AS HUGEINT)
            AS tokens,
        CAST(c.facet -> '$.size.bytes' AS HUGEINT) AS bytes,
        CAST(c.facet -> '$.size.items' AS HUGEINT) AS items,
        u.facet IS NOT NULL AS measured_usage
    FROM training_runs AS t
    JOIN core.lineage_run_io AS i ON i.run_id = t.run_id AND i.direction = 'INPUT'
    JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = i.dataset_version_id
    JOIN core.lineage_datasets AS d ON d.dataset_id = v.dataset_id
    LEFT JOIN core.lineage_version_facets AS c
        ON c.dataset_version_id = i.dataset_version_id AND c.facet_name = 'annex_content'
    LEFT JOIN core.lineage_current_facets AS u
        ON u.entity_kind = 'input' AND u.entity_id = i.run_id || '/' || i.named_version_id
        AND u.facet_name = 'annex_trainingUsage'
    WHERE d.kind <> 'MODEL'
),
sized AS (
    SELECT
        model_version_id,
        any_value(model_name) AS model_name,
        modality,
        sum(tokens) AS tokens,
        sum(bytes) AS bytes,
        sum(items) AS items,
        count(*) AS training_inputs,
        bool_and(measured_usage) AS all_from_usage
    FROM consumed
    GROUP BY model_version_id, modality
)
SELECT
    *,
    CASE
        WHEN modality = 'TEXT' AND tokens IS NULL THEN NULL
        WHEN modality = 'TEXT' AND tokens < 1000000000 THEN 'Less than 1 billion tokens'
        WHEN modality = 'TEXT' AND tokens <= 10000000000000 THEN '1 billion to 10 trillion tokens'
        WHEN modality = 'TEXT' THEN 'More than 10 trillion tokens'
        WHEN modality = 'IMAGE' AND items IS NULL THEN NULL
        WHEN modality = 'IMAGE' AND items < 1000000 THEN 'Less than 1 million images'
        WHEN modality = 'IMAGE' AND items <= 1000000000 THEN '1 million to 1 billion images'
        WHEN modality = 'IMAGE' THEN 'More than 1 billion images'
    END AS band
FROM sized;

COMMENT ON VIEW marts.lineage_eu_summary_size IS
    'EU training-content summary 1.3, per model checkpoint and modality: the training data''s size after pre-processing (tokens the PRETRAINING and FINE_TUNING runs of its EU scope consumed, from annex_trainingUsage, else the inputs'' annex_content size), in the template''s bands for text and images; other modalities are reported as measured (band NULL).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.modality IS
    'annex_content.modality of the training inputs; UNKNOWN without one.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.tokens IS
    'Tokens consumed (annex_trainingUsage.tokensConsumed, else annex_content.size.tokens).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.bytes IS
    'annex_content.size.bytes of the training inputs.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.items IS
    'annex_content.size.items of the training inputs (images for IMAGE).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.training_inputs IS
    'Training-run input edges summed.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.all_from_usage IS
    'Every edge carried annex_trainingUsage (else some tokens are the inputs'' full size).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.band IS
    'The template''s range: text < 1B, 1B-10T, > 10T tokens; images < 1M, 1M-1B, > 1B; NULL for other modalities (report tokens, bytes, items as measured).';
