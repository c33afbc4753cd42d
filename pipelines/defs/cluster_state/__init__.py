"""Cluster state from the Kubernetes API: inventory assets, checks, schedule and sensors."""

from __future__ import annotations

import dagster as dg

from pipelines.defs.cluster_state.assets import (
    cluster_inventory,
    fleet_marts,
    published_warehouse,
)
from pipelines.defs.cluster_state.checks import CHECKS
from pipelines.defs.cluster_state.schedules import hourly_cluster_inventory, inventory_job
from pipelines.defs.cluster_state.sensors import cluster_discovery, record_inventory_failure
from pipelines.defs.shared import warehouse_schema

defs = dg.Definitions(
    assets=[warehouse_schema, cluster_inventory, fleet_marts, published_warehouse],
    asset_checks=CHECKS,
    jobs=[inventory_job],
    schedules=[hourly_cluster_inventory],
    sensors=[cluster_discovery, record_inventory_failure],
)
