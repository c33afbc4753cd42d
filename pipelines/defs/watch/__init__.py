"""Watch mode in Dagster: a catch-up asset per cluster, its sensor, and the drift check.

The always-on watch is the ``annex watch`` Deployment (deploy/watch-deployment.yaml); where it
is not deployed, the sensor here catches each cluster's watch up every few minutes instead (the
cursors make either way exact). Do not run both for one cluster: the second writer's commit is
refused (``CursorMoved``).
"""

import dagster as dg

from pipelines.defs.watch.assets import watched_gpu_allocations
from pipelines.defs.watch.checks import CHECKS
from pipelines.defs.watch.sensors import watch_catch_up, watch_catch_up_job

defs = dg.Definitions(
    assets=[watched_gpu_allocations],
    asset_checks=CHECKS,
    jobs=[watch_catch_up_job],
    sensors=[watch_catch_up],
)
