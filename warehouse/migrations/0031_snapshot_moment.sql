-- 0031 A snapshot's moment by the API server's clock (issue 39 item 1).
--   audit.collections.collected_at: the moment the collection's rows are stamped with (the
--     slowly changing rows' valid_from, the closing time of what vanished). For a Kubernetes
--     collection it is the HTTP Date of its first list response (the clock that stamps the
--     objects' own timestamps) when that disagrees with the local clock; else the local clock
--     when loading began (started_at), as before this migration.
--   audit.collections.collected_at_clock: which clock that was (api_server).
--   Both are NULL for a collection stamped with started_at by the local clock (every row
--   before this migration, and every collection of the other sources).
ALTER TABLE audit.collections ADD COLUMN collected_at TIMESTAMP;
ALTER TABLE audit.collections ADD COLUMN collected_at_clock VARCHAR;

COMMENT ON COLUMN audit.collections.collected_at IS
    'UTC moment the collection''s rows are stamped with (valid_from of the slowly changing rows it opens, valid_to of those it closes). A Kubernetes collection takes it from the API server''s HTTP Date header of its first list response when that disagrees with the local clock by more than the header''s one-second resolution (a snapshot taken at the server''s time, the clock of the objects'' own timestamps). NULL: the rows were stamped with started_at, by the local clock (no usable Date header, one that agrees with the local clock, or another source).';
COMMENT ON COLUMN audit.collections.collected_at_clock IS
    'Which clock collected_at is from: api_server (the HTTP Date of the first list response); NULL when collected_at is NULL (the local clock: started_at).';
COMMENT ON COLUMN audit.collections.started_at IS
    'When the collection started loading (UTC), by the local clock. The rows it loaded are stamped with it, unless collected_at says otherwise (the API server''s clock).';
