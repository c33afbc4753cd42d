-- Three stored facts of the lineage graph no longer depend on the order in which collections
-- bring their events: a version's producer on a tie in eventTime (two runs naming it as output
-- at the same instant) is the smaller run id; an edge's first event on a tie is the smaller
-- event_id, as within one collection; a version named both by its version facet and by its
-- run's id (a run that sends its runId as datasetVersion) has the source facet. Before, across
-- collections, the first stored kept its place (and within one, the source was either). Only
-- the documentation of the columns changes here; rows stored before keep their value until an
-- event naming them arrives.

COMMENT ON COLUMN core.lineage_dataset_versions.produced_by_run_id IS 'The run whose output it is, by the earliest such event (a tie in eventTime: the smaller run id); NULL for sources (leaves). A version two runs claim keeps the earlier one here; the closure follows every producing run (core.lineage_run_io).';
COMMENT ON COLUMN core.lineage_run_io.first_event_id IS 'That event (core.lineage_events); a tie in eventTime: the smaller event_id.';
COMMENT ON COLUMN core.lineage_dataset_versions.version_source IS 'facet (the version facet), run (an output without one: the producing runId) or none (NULL version). A version named both ways (a run that sends its runId as datasetVersion) has facet.';
