-- Staging tables of the lineage collector (collectors/lineage); columns match its Arrow schemas
-- (collectors/lineage/schema.py) by name, in order (a test checks). Its rejected
-- events arrive as the engine's own stage_rejected (warehouse/load.py).

CREATE TEMP TABLE stage_lineage_events (
    event_id VARCHAR,
    received_at TIMESTAMP,
    event_time TIMESTAMP,
    event_time_offset_minutes SMALLINT,
    event_kind VARCHAR,
    event_type VARCHAR,
    run_id VARCHAR,
    job_namespace VARCHAR,
    job_name VARCHAR,
    producer VARCHAR,
    schema_url VARCHAR,
    payload VARCHAR,  -- text (substring() cuts facets out of it fast: see step 5 of the merge)
    findings VARCHAR[],
    source_locator VARCHAR,
    event_index BIGINT,  -- named by its stage_lineage_items and stage_lineage_facets rows
    graph_read BOOLEAN  -- false or NULL: the merge parses the payload for its graph
);

-- The graph of each event the collector read (collectors/lineage/graph.py): LINEAGE_ITEMS and
-- LINEAGE_FACETS.
CREATE TEMP TABLE stage_lineage_items (
    event_index BIGINT,
    direction VARCHAR,
    item INTEGER,
    namespace VARCHAR,
    name VARCHAR,
    version VARCHAR
);

CREATE TEMP TABLE stage_lineage_facets (
    event_index BIGINT,
    place VARCHAR,
    item INTEGER,
    facet_name VARCHAR,
    value_start INTEGER,  -- characters (code points), from 0
    value_length INTEGER
);
