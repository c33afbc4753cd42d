-- marts.lineage_eu_crawlers: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_eu_crawlers AS
SELECT
    model_version_id,
    any_value(model_name) AS model_name,
    crawl ->> '$.crawlerName' AS crawler_name,
    string_agg(DISTINCT crawl ->> '$.purpose', ', ') AS purposes,
    min(TRY_CAST(crawl ->> '$.collectionPeriod.start' AS DATE)) AS collection_start,
    max(TRY_CAST(crawl ->> '$.collectionPeriod.end' AS DATE)) AS collection_end,
    string_agg(DISTINCT crawl ->> '$.optOut.robotsTxt', ', ') AS robots_txt,
    string_agg(DISTINCT crawl ->> '$.optOut.tdmrep', ', ') AS tdmrep,
    string_agg(DISTINCT crawl ->> '$.optOut.ietfAipref', ', ') AS ietf_aipref,
    string_agg(DISTINCT crawl ->> '$.optOut.aiTxt', ', ') AS ai_txt,
    string_agg(DISTINCT crawl ->> '$.optOut.checkedAt', ', ') AS opt_out_checked_at,
    sum(CAST(crawl -> '$.optOut.documentsExcluded' AS HUGEINT)) AS documents_excluded,
    string_agg(DISTINCT crawl ->> '$.paywallPolicy', ', ') AS paywall_policy,
    string_agg(DISTINCT modality, ', ') AS modalities,
    count(*) AS datasets
FROM marts.lineage_model_sources
WHERE source_category = 'CRAWLED' AND crawl IS NOT NULL
GROUP BY model_version_id, crawl ->> '$.crawlerName';

COMMENT ON VIEW marts.lineage_eu_crawlers IS
    'EU training-content summary 2.3, per model checkpoint and crawler: purpose, collection period, behaviour towards opt-outs (robots.txt, TDMRep, IETF AIPREF, ai.txt) and paywalls, from the annex_crawl facets of its crawled sources. Several values of one field are listed comma-separated.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.crawler_name IS
    'annex_crawl.crawlerName.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.purposes IS
    'annex_crawl.purpose values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.collection_start IS
    'Earliest collectionPeriod.start.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.collection_end IS
    'Latest collectionPeriod.end.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.robots_txt IS
    'optOut.robotsTxt values (RESPECTED, NOT_RESPECTED, NOT_CHECKED).';
COMMENT ON COLUMN marts.lineage_eu_crawlers.tdmrep IS
    'optOut.tdmrep values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.ietf_aipref IS
    'optOut.ietfAipref values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.ai_txt IS
    'optOut.aiTxt values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.opt_out_checked_at IS
    'optOut.checkedAt values (FETCH_TIME, INGEST_TIME).';
COMMENT ON COLUMN marts.lineage_eu_crawlers.documents_excluded IS
    'Sum of optOut.documentsExcluded.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.paywall_policy IS
    'paywallPolicy values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.modalities IS
    'annex_content.modality values of the crawled datasets.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.datasets IS
    'Crawled dataset versions of the crawler.';
