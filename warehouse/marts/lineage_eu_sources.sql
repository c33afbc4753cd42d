-- marts.lineage_eu_sources: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_eu_sources AS
SELECT
    model_version_id,
    model_name,
    CASE source_category
        WHEN 'PUBLIC_DATASET' THEN '2.1'
        WHEN 'PRIVATE_LICENSED' THEN '2.2.1'
        WHEN 'PRIVATE_THIRD_PARTY' THEN '2.2.2'
        WHEN 'CRAWLED' THEN '2.3'
        WHEN 'USER_DATA' THEN '2.4'
        WHEN 'SYNTHETIC' THEN '2.5'
        WHEN 'OTHER' THEN '2.6'
    END AS section,
    source_category,
    dataset_version_id,
    namespace,
    name,
    version,
    is_leaf,
    publicly_available,
    description,
    spdx_expression,
    hf_license_id,
    copyright_status,
    tdm_exception,
    licensor,
    modality,
    size_tokens,
    languages,
    latest_collection_date,
    personal_data_present
FROM marts.lineage_model_sources
WHERE source_category NOT IN ('DERIVED', 'MODEL');

COMMENT ON VIEW marts.lineage_eu_sources IS
    'EU training-content summary section 2, per model checkpoint: every source of its training content by category (2.1 public datasets, 2.2.1 licensed from rightsholders, 2.2.2 other private third-party, 2.3 crawled, 2.4 user data, 2.5 synthetic, 2.6 other), with licence. Leaves without annex_source appear as UNKNOWN (section NULL): a gap to fix.';
COMMENT ON COLUMN marts.lineage_eu_sources.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_sources.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_sources.section IS
    'Template section: 2.1, 2.2.1, 2.2.2, 2.3, 2.4, 2.5 or 2.6; NULL for UNKNOWN.';
COMMENT ON COLUMN marts.lineage_eu_sources.source_category IS
    'annex_source.sourceCategory, or UNKNOWN.';
COMMENT ON COLUMN marts.lineage_eu_sources.dataset_version_id IS
    'The source''s dataset version.';
COMMENT ON COLUMN marts.lineage_eu_sources.namespace IS
    'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_eu_sources.name IS
    'Its dataset name.';
COMMENT ON COLUMN marts.lineage_eu_sources.version IS
    'Its version.';
COMMENT ON COLUMN marts.lineage_eu_sources.is_leaf IS
    'No run produced it.';
COMMENT ON COLUMN marts.lineage_eu_sources.publicly_available IS
    'annex_source.publiclyAvailable.';
COMMENT ON COLUMN marts.lineage_eu_sources.description IS
    'annex_source.description.';
COMMENT ON COLUMN marts.lineage_eu_sources.spdx_expression IS
    'annex_licensing.spdxExpression.';
COMMENT ON COLUMN marts.lineage_eu_sources.hf_license_id IS
    'annex_licensing.hfLicenseId.';
COMMENT ON COLUMN marts.lineage_eu_sources.copyright_status IS
    'annex_licensing.copyrightStatus.';
COMMENT ON COLUMN marts.lineage_eu_sources.tdm_exception IS
    'annex_licensing.tdmExceptionReliedOn.';
COMMENT ON COLUMN marts.lineage_eu_sources.licensor IS
    'annex_licensing.licensor.';
COMMENT ON COLUMN marts.lineage_eu_sources.modality IS
    'annex_content.modality.';
COMMENT ON COLUMN marts.lineage_eu_sources.size_tokens IS
    'annex_content.size.tokens.';
COMMENT ON COLUMN marts.lineage_eu_sources.languages IS
    'annex_content.languages.';
COMMENT ON COLUMN marts.lineage_eu_sources.latest_collection_date IS
    'annex_content.latestCollectionDate.';
COMMENT ON COLUMN marts.lineage_eu_sources.personal_data_present IS
    'annex_personalData.present.';
