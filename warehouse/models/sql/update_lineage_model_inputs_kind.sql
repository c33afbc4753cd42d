-- A later datasetType facet can turn a dataset into a MODEL (or back): kept rows take the
-- current kind. A dataset's kind changes only in a collection that sets the datasetType head of
-- one of its versions (the collection's step 6), so only those datasets are looked up, not
-- every kept row's.
-- Run by warehouse/models/lineage_refresh.py (_KINDS).
UPDATE marts.lineage_model_inputs AS i
SET kind = d.kind
FROM core.lineage_dataset_versions AS v, core.lineage_datasets AS d
WHERE v.dataset_version_id = i.dataset_version_id
  AND d.dataset_id = v.dataset_id
  AND i.kind <> d.kind
  AND d.dataset_id IN (
      SELECT typed.dataset_id
      FROM core.lineage_facet_heads AS h
      JOIN core.lineage_dataset_versions AS typed ON typed.dataset_version_id = h.entity_id
      WHERE h.collection_id IN (SELECT collection_id FROM lin_new_collections)
        AND h.entity_kind = 'dataset' AND h.facet_name = 'datasetType'
  )
