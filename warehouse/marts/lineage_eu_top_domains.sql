-- marts.lineage_eu_top_domains: re-created on every migrate from this file (warehouse/marts/README.md).
-- The top 10% cut of the table macro marts.lineage_top_domains (defined after the view in
-- lineage_model_sources.sql); naming marts.lineage_model_sources here orders this view after it.
CREATE OR REPLACE VIEW marts.lineage_eu_top_domains AS
SELECT t.*
FROM marts.lineage_top_domains(0.10) AS t
WHERE EXISTS (SELECT 1 FROM marts.lineage_model_sources AS s
              WHERE s.model_version_id = t.model_version_id);

COMMENT ON VIEW marts.lineage_eu_top_domains IS
    'EU training-content summary 2.3, the most relevant domain names per model checkpoint: the top 10% of the domains of its crawled sources by tokens (annex_content.domainStats.topN), with their share. For another cut-off (5% or 1,000 for SMEs) call the table macro marts.lineage_top_domains(share).';
COMMENT ON COLUMN marts.lineage_eu_top_domains.model_version_id IS
    'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.web_domain IS
    'Domain name.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.tokens IS
    'Tokens from the domain over the crawled sources.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.share IS
    'Its share of the tokens of all domains listed.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.rank IS
    '1 for the largest domain.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.web_domains IS
    'Domains listed for the checkpoint in all (the cut-off is ceil(share × web_domains)).';
