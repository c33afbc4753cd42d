-- marts.lineage_eu_measures: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_eu_measures AS
WITH crawl AS (
    SELECT model_version_id, model_name, dataset_version_id, crawl
    FROM marts.lineage_model_sources
    WHERE crawl IS NOT NULL
),
measures AS (
    SELECT model_version_id, model_name, dataset_version_id, 'tdm_opt_out' AS kind,
           p.k || ': ' || coalesce(crawl ->> ('$.optOut.' || p.k), 'NOT_STATED') AS measure,
           CAST(crawl -> '$.optOut.documentsExcluded' AS HUGEINT) AS items
    FROM crawl, (VALUES ('robotsTxt'), ('tdmrep'), ('ietfAipref'), ('aiTxt')) AS p(k)
    UNION ALL
    SELECT model_version_id, model_name, dataset_version_id, 'paywall',
           'paywallPolicy: ' || coalesce(crawl ->> '$.paywallPolicy', 'NOT_STATED'), NULL
    FROM crawl
    UNION ALL
    SELECT model_version_id, model_name, dataset_version_id, 'illegal_content',
           unnest(illegal_content_measures), illegal_content_removed_items
    FROM marts.lineage_model_sources
    WHERE illegal_content_measures IS NOT NULL
    UNION ALL
    SELECT model_version_id, model_name, dataset_version_id, 'personal_data',
           unnest(personal_data_measures), NULL
    FROM marts.lineage_model_sources
    WHERE personal_data_measures IS NOT NULL
)
SELECT
    model_version_id,
    any_value(model_name) AS model_name,
    kind,
    measure,
    count(DISTINCT dataset_version_id) AS datasets,
    sum(items) AS items
FROM measures
GROUP BY model_version_id, kind, measure;

COMMENT ON VIEW marts.lineage_eu_measures IS
    'EU training-content summary 3.1 and 3.2, per model checkpoint: the measures its training content''s facets state: text-and-data-mining opt-outs honoured by crawlers (tdm_opt_out: signal and behaviour, documents excluded), paywall policy, illegal-content removal (with items removed), personal-data measures.';
COMMENT ON COLUMN marts.lineage_eu_measures.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_measures.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_measures.kind IS
    'tdm_opt_out, paywall, illegal_content or personal_data.';
COMMENT ON COLUMN marts.lineage_eu_measures.measure IS
    'The measure: signal: behaviour for opt-outs and paywalls, else the measure''s name as stated.';
COMMENT ON COLUMN marts.lineage_eu_measures.datasets IS
    'Dataset versions stating it.';
COMMENT ON COLUMN marts.lineage_eu_measures.items IS
    'Items concerned: documents excluded by opt-outs, items removed as illegal content (sums over the datasets).';
