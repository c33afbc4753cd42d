-- marts.lineage_eu_synthetic: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_eu_synthetic AS
SELECT
    model_version_id,
    model_name,
    dataset_version_id,
    namespace,
    name,
    version,
    generator_models,
    (
        SELECT list(DISTINCT v.name ORDER BY v.name)
        FROM core.lineage_run_io AS o
        JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
        JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = i.dataset_version_id
        JOIN core.lineage_datasets AS d ON d.dataset_id = v.dataset_id
        WHERE o.dataset_version_id = s.dataset_version_id AND o.direction = 'OUTPUT'
          AND d.kind = 'MODEL'
    ) AS generator_checkpoints,
    modality,
    size_tokens,
    description
FROM marts.lineage_model_sources AS s
WHERE source_category = 'SYNTHETIC';

COMMENT ON VIEW marts.lineage_eu_synthetic IS
    'EU training-content summary 2.5, per model checkpoint: the synthetic datasets of its training content with the models that generated them.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.dataset_version_id IS
    'The synthetic dataset version.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.namespace IS
    'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.name IS
    'Its dataset name.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.version IS
    'Its version.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.generator_models IS
    'annex_source.generatorModels.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.generator_checkpoints IS
    'Names of the model checkpoints the runs that wrote the synthetic dataset read (the generators the lineage shows); NULL when none.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.modality IS
    'annex_content.modality.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.size_tokens IS
    'annex_content.size.tokens.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.description IS
    'annex_source.description.';
