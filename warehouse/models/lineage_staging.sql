-- Staging table of the lineage collector (collectors/lineage); columns match its Arrow schema
-- LINEAGE_EVENTS (collectors/lineage/schema.py) by name, in order (a test checks). Its rejected
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
    payload JSON,  -- staged from Arrow's JSON type as is: the merge parses it (step 3)
    findings VARCHAR[],
    source_locator VARCHAR
);
