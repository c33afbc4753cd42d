"""The Kubernetes source model: how ``collectors/kubernetes`` batches land in the warehouse.

Tables (created by ``migrations/0002_kubernetes.sql``, every core/marts column commented):

* ``raw.kubernetes_{nodes,pods,jobs,priority_classes,events,resource_slices,resource_claims,
  resource_claim_templates}``: kept fields, a row per change.
* ``core.nodes`` (slowly changing: ``valid_from``/``valid_to``), ``core.node_gpu_resources``,
  ``core.pods``, ``core.jobs``, ``core.priority_classes``, ``core.events``, ``core.dra_claims``,
  ``core.dra_claim_templates`` (current state per object, ``present``/``vanished_at``),
  ``core.dra_devices`` (DRA devices, slowly changing), ``core.gpu_allocations`` (intervals).
* ``raw.kubernetes_kueue_*`` and ``core.kueue_{workloads,cluster_queues,local_queues,
  resource_flavors}`` (``migrations/0025_kueue.sql``): current state, merged like ``core.jobs``.
* ``audit.kubernetes_lists``: each list of each collection (snapshot RV, consistency, latency).
* ``marts.node_gpu_capacity``, ``marts.fleet_gpu_by_{model,pool,domain,namespace}``,
  ``marts.fleet_summary``, ``marts.pending_gpu_demand`` (pending pods' GPUs, DRA claims included;
  ``migrations/0033_pending_claim_demand.sql``).

The staging tables' columns are the collector's Arrow field names (a test checks both agree);
the merge is plain SQL in ``kubernetes_merge.sql``. The four "current state" tables share one
merge pattern, written once below.
"""

from __future__ import annotations

from pathlib import Path

from warehouse.load import SourceModel

_HERE = Path(__file__).parent

CURRENT_STATE_TABLES: dict[str, str] = {
    "pods": "pod_uid",
    "jobs": "job_uid",
    "priority_classes": "priority_class_uid",
    "events": "event_uid",
    "kueue_workloads": "workload_uid",
    "kueue_cluster_queues": "cluster_queue_uid",
    "kueue_local_queues": "local_queue_uid",
    "kueue_resource_flavors": "resource_flavor_uid",
    "resource_claims": "claim_uid",
    "resource_claim_templates": "claim_template_uid",
}
"""Tables kept as one current row per object: table name -> key column."""

CORE_NAMES: dict[str, str] = {
    "resource_claims": "dra_claims",
    "resource_claim_templates": "dra_claim_templates",
}
"""Current-state tables whose core name is not the collector's (docs/naming.md); their raw
table keeps the collector's: ``raw.kubernetes_resource_claims`` -> ``core.dra_claims``."""

_CURRENT_STATE_SQL = """
CREATE OR REPLACE TEMP TABLE k8s_snapshot_{table} AS
SELECT *, hash(*COLUMNS(* EXCLUDE (resource_version))) AS content_hash
FROM (
    SELECT * EXCLUDE (list_attempt)
    FROM stage_{table}
    WHERE list_attempt = (SELECT max(list_attempt) FROM stage_{table})
);

CREATE OR REPLACE TEMP TABLE k8s_changed_{table} AS
SELECT s.*, c.first_seen_at AS known_since
FROM k8s_snapshot_{table} AS s
LEFT JOIN core.{core} AS c
    ON c.cluster = getvariable('cluster') AND c.{key} = s.{key}
WHERE c.{key} IS NULL OR c.content_hash <> s.content_hash OR NOT c.present;

INSERT INTO raw.kubernetes_{table} BY NAME
SELECT
    getvariable('cluster') AS cluster,
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS collected_at,
    * EXCLUDE (known_since)
FROM k8s_changed_{table};

DELETE FROM core.{core} AS c
WHERE c.cluster = getvariable('cluster')
  AND c.{key} IN (SELECT {key} FROM k8s_changed_{table});

INSERT INTO core.{core} BY NAME
SELECT
    getvariable('cluster') AS cluster,
    * EXCLUDE (known_since),
    coalesce(known_since, getvariable('collected_at')) AS first_seen_at,
    getvariable('collected_at') AS changed_at,
    true AS present,
    NULL::TIMESTAMP AS vanished_at,
    getvariable('collection_id') AS collection_id
FROM k8s_changed_{table};

UPDATE core.{core} AS c
SET present = false,
    vanished_at = getvariable('collected_at'),
    collection_id = getvariable('collection_id')
WHERE c.cluster = getvariable('cluster') AND c.present
  AND coalesce((SELECT consistent FROM k8s_list_consistency WHERE resource = '{table}'), false)
  AND NOT EXISTS (SELECT 1 FROM k8s_snapshot_{table} AS s WHERE s.{key} = c.{key});

DROP TABLE k8s_changed_{table};
"""


def _merge_sql() -> str:
    blocks = "\n".join(
        _CURRENT_STATE_SQL.format(table=table, key=key, core=CORE_NAMES.get(table, table))
        for table, key in CURRENT_STATE_TABLES.items()
    )
    template = (_HERE / "kubernetes_merge.sql").read_text(encoding="utf-8")
    return template.replace("{current_state}", blocks)


KUBERNETES_MODEL = SourceModel(
    source="kubernetes",
    staging_sql=(_HERE / "kubernetes_staging.sql").read_text(encoding="utf-8"),
    merge_sql=_merge_sql(),
)
