-- marts.lineage_model_producers: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_model_producers AS
WITH scope AS (
    SELECT model_version_id, model_name, dataset_version_id FROM marts.lineage_model_sources
    UNION
    SELECT model_version_id, model_name, model_version_id FROM marts.lineage_models
),
stated AS (
    SELECT s.model_version_id, s.model_name, f.facet ->> '$._producer' AS producer,
           'facet' AS via, s.dataset_version_id AS ref
    FROM scope AS s
    JOIN core.lineage_version_facets AS f ON f.dataset_version_id = s.dataset_version_id
    UNION ALL
    SELECT s.model_version_id, s.model_name, e.producer, 'event', e.run_id
    FROM scope AS s
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = s.dataset_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_events AS e ON e.run_id = o.run_id
)
SELECT
    model_version_id,
    any_value(model_name) AS model_name,
    producer,
    count(DISTINCT ref) FILTER (WHERE via = 'facet') AS dataset_versions,
    count(DISTINCT ref) FILTER (WHERE via = 'event') AS runs,
    producer ILIKE '%simulat%' AS simulated
FROM stated
WHERE producer IS NOT NULL
GROUP BY model_version_id, producer;

COMMENT ON VIEW marts.lineage_model_producers IS
    'Who described each model checkpoint''s training content: the producer URIs of the facets of the versions in its EU scope (marts.lineage_model_sources, the checkpoint included) and of the events of the runs that wrote them. simulated marks a producer that names annex''s simulator (or says it is simulated): reports show the mark.';
COMMENT ON COLUMN marts.lineage_model_producers.model_version_id IS
    'The checkpoint (marts.lineage_models).';
COMMENT ON COLUMN marts.lineage_model_producers.model_name IS
    'Its model name.';
COMMENT ON COLUMN marts.lineage_model_producers.producer IS
    'A producer URI (an event''s producer or a facet''s _producer).';
COMMENT ON COLUMN marts.lineage_model_producers.dataset_versions IS
    'Versions of the scope with a facet from this producer.';
COMMENT ON COLUMN marts.lineage_model_producers.runs IS
    'Runs writing a version of the scope with an event from this producer.';
COMMENT ON COLUMN marts.lineage_model_producers.simulated IS
    'The URI contains "simulat" (annex''s simulator writes https://annex.dev/simulator/...).';
