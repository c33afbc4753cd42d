"""Partition definitions shared by the Dagster code location.

``clusters`` is dynamic because the set of clusters comes from the annex settings, which change
without a code deploy: the discovery sensor adds a partition for every configured cluster.
"""

from __future__ import annotations

import dagster as dg

CLUSTERS_PARTITIONS_NAME = "clusters"

clusters = dg.DynamicPartitionsDefinition(name=CLUSTERS_PARTITIONS_NAME)
