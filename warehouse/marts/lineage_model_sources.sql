-- marts.lineage_model_sources: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_model_sources AS
WITH f AS (
    SELECT
        dataset_version_id,
        any_value(facet) FILTER (WHERE facet_name = 'annex_source') AS src,
        any_value(facet) FILTER (WHERE facet_name = 'annex_licensing') AS lic,
        any_value(facet) FILTER (WHERE facet_name = 'annex_content') AS content,
        any_value(facet) FILTER (WHERE facet_name = 'annex_crawl') AS crawl,
        any_value(facet) FILTER (WHERE facet_name = 'annex_personalData') AS personal,
        any_value(facet) FILTER (WHERE facet_name = 'annex_illegalContent') AS illegal
    FROM core.lineage_version_facets
    WHERE facet_name IN ('annex_source', 'annex_licensing', 'annex_content', 'annex_crawl',
                         'annex_personalData', 'annex_illegalContent')
    GROUP BY dataset_version_id
)
SELECT
    m.model_version_id,
    m.model_name,
    m.dataset_version_id,
    m.namespace,
    m.name,
    m.version,
    m.kind,
    m.depth,
    m.is_leaf,
    CASE
        WHEN m.kind = 'MODEL' THEN 'MODEL'
        ELSE coalesce(f.src ->> '$.sourceCategory', CASE WHEN m.is_leaf THEN 'UNKNOWN' ELSE 'DERIVED' END)
    END AS source_category,
    CAST(f.src -> '$.publiclyAvailable' AS BOOLEAN) AS publicly_available,
    f.src ->> '$.description' AS description,
    CAST(f.src -> '$.generatorModels' AS VARCHAR[]) AS generator_models,
    f.lic ->> '$.spdxExpression' AS spdx_expression,
    f.lic ->> '$.hfLicenseId' AS hf_license_id,
    f.lic ->> '$.copyrightStatus' AS copyright_status,
    f.lic ->> '$.tdmExceptionReliedOn' AS tdm_exception,
    f.lic ->> '$.licensor' AS licensor,
    f.content ->> '$.modality' AS modality,
    CAST(f.content -> '$.size.tokens' AS HUGEINT) AS size_tokens,
    CAST(f.content -> '$.size.bytes' AS HUGEINT) AS size_bytes,
    CAST(f.content -> '$.size.items' AS HUGEINT) AS size_items,
    CAST(f.content -> '$.languages' AS VARCHAR[]) AS languages,
    CAST(f.content -> '$.contentTypes' AS VARCHAR[]) AS content_types,
    TRY_CAST(f.content ->> '$.latestCollectionDate' AS DATE) AS latest_collection_date,
    f.content -> '$.domainStats' AS web_domain_stats,
    f.crawl,
    f.personal ->> '$.present' AS personal_data_present,
    f.personal ->> '$.sensitive' AS personal_data_sensitive,
    CAST(f.personal -> '$.measures' AS VARCHAR[]) AS personal_data_measures,
    CAST(f.illegal -> '$.measures' AS VARCHAR[]) AS illegal_content_measures,
    CAST(f.illegal -> '$.removedItems' AS HUGEINT) AS illegal_content_removed_items
FROM marts.lineage_model_inputs AS m
LEFT JOIN f ON f.dataset_version_id = m.dataset_version_id
WHERE m.in_eu_scope;

COMMENT ON VIEW marts.lineage_model_sources IS
    'The training content of each model for the EU summary: the versions of its closure in EU scope (marts.lineage_model_inputs.in_eu_scope), with the fields of their effective annex_ facets (core.lineage_version_facets). The other marts.lineage_eu_* views read it.';
COMMENT ON COLUMN marts.lineage_model_sources.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_model_sources.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_model_sources.dataset_version_id IS
    'An upstream version in EU scope.';
COMMENT ON COLUMN marts.lineage_model_sources.namespace IS
    'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_model_sources.name IS
    'Its dataset name.';
COMMENT ON COLUMN marts.lineage_model_sources.version IS
    'Its version.';
COMMENT ON COLUMN marts.lineage_model_sources.kind IS
    'MODEL or DATASET.';
COMMENT ON COLUMN marts.lineage_model_sources.depth IS
    'Fewest runs between it and the checkpoint.';
COMMENT ON COLUMN marts.lineage_model_sources.is_leaf IS
    'No run produced it.';
COMMENT ON COLUMN marts.lineage_model_sources.source_category IS
    'annex_source.sourceCategory (PUBLIC_DATASET, PRIVATE_LICENSED, PRIVATE_THIRD_PARTY, CRAWLED, USER_DATA, SYNTHETIC, OTHER, DERIVED); MODEL for a checkpoint; without the facet UNKNOWN for a leaf (a gap to fix) and DERIVED otherwise.';
COMMENT ON COLUMN marts.lineage_model_sources.publicly_available IS
    'annex_source.publiclyAvailable.';
COMMENT ON COLUMN marts.lineage_model_sources.description IS
    'annex_source.description.';
COMMENT ON COLUMN marts.lineage_model_sources.generator_models IS
    'annex_source.generatorModels (SYNTHETIC).';
COMMENT ON COLUMN marts.lineage_model_sources.spdx_expression IS
    'annex_licensing.spdxExpression (SPDX id or expression, or NOASSERTION).';
COMMENT ON COLUMN marts.lineage_model_sources.hf_license_id IS
    'annex_licensing.hfLicenseId.';
COMMENT ON COLUMN marts.lineage_model_sources.copyright_status IS
    'annex_licensing.copyrightStatus.';
COMMENT ON COLUMN marts.lineage_model_sources.tdm_exception IS
    'annex_licensing.tdmExceptionReliedOn (EU_DSM_ART3, EU_DSM_ART4, NONE).';
COMMENT ON COLUMN marts.lineage_model_sources.licensor IS
    'annex_licensing.licensor.';
COMMENT ON COLUMN marts.lineage_model_sources.modality IS
    'annex_content.modality (TEXT, IMAGE, AUDIO, VIDEO, OTHER).';
COMMENT ON COLUMN marts.lineage_model_sources.size_tokens IS
    'annex_content.size.tokens.';
COMMENT ON COLUMN marts.lineage_model_sources.size_bytes IS
    'annex_content.size.bytes.';
COMMENT ON COLUMN marts.lineage_model_sources.size_items IS
    'annex_content.size.items.';
COMMENT ON COLUMN marts.lineage_model_sources.languages IS
    'annex_content.languages (BCP-47).';
COMMENT ON COLUMN marts.lineage_model_sources.content_types IS
    'annex_content.contentTypes.';
COMMENT ON COLUMN marts.lineage_model_sources.latest_collection_date IS
    'annex_content.latestCollectionDate.';
COMMENT ON COLUMN marts.lineage_model_sources.web_domain_stats IS
    'annex_content.domainStats (topN [{domain, tokens}], fullStatsUri).';
COMMENT ON COLUMN marts.lineage_model_sources.crawl IS
    'The annex_crawl facet.';
COMMENT ON COLUMN marts.lineage_model_sources.personal_data_present IS
    'annex_personalData.present (yes, no, noAssertion).';
COMMENT ON COLUMN marts.lineage_model_sources.personal_data_sensitive IS
    'annex_personalData.sensitive.';
COMMENT ON COLUMN marts.lineage_model_sources.personal_data_measures IS
    'annex_personalData.measures.';
COMMENT ON COLUMN marts.lineage_model_sources.illegal_content_measures IS
    'annex_illegalContent.measures.';
COMMENT ON COLUMN marts.lineage_model_sources.illegal_content_removed_items IS
    'annex_illegalContent.removedItems.';

-- The table macro behind marts.lineage_eu_top_domains, for other cut-offs (5%, or 1,000 for
-- SMEs): it reads this view's web_domain_stats, so it is (re)created right after the view.
CREATE OR REPLACE MACRO marts.lineage_top_domains(top_share) AS TABLE
WITH d AS (
    SELECT s.model_version_id, any_value(s.model_name) AS model_name, t.e.domain AS web_domain,
           sum(t.e.tokens) AS tokens
    FROM marts.lineage_model_sources AS s,
         unnest(CAST(s.web_domain_stats -> '$.topN' AS STRUCT(domain VARCHAR, tokens DOUBLE)[]))
             AS t(e)
    WHERE s.source_category = 'CRAWLED'
    GROUP BY s.model_version_id, t.e.domain
),
r AS (
    SELECT
        *,
        tokens / sum(tokens) OVER (PARTITION BY model_version_id) AS share,
        row_number() OVER (PARTITION BY model_version_id ORDER BY tokens DESC, web_domain)
            AS rank,
        count(*) OVER (PARTITION BY model_version_id) AS web_domains
    FROM d
)
SELECT model_version_id, model_name, web_domain, tokens, share, rank, web_domains
FROM r
WHERE rank <= ceil(top_share * web_domains);
