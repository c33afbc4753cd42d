"""Simulated OpenLineage producer: the training-data lineage of a world's training runs.

from simulator.lineage import build_events, deliver
events = build_events(build_world(50, seed=1))
deliver(events, "http://127.0.0.1:5000/", token="...", duplicate_fraction=0.05)
"""

from simulator.lineage.catalog import EU_CATEGORIES, Catalog, Source, build_catalog
from simulator.lineage.producer import (
    DEFAULT_CLUSTER,
    MALFORMED_KINDS,
    PRODUCER,
    Delivery,
    Malformed,
    build_events,
    deliver,
    delivery_order,
    malformed_bodies,
    post_malformed,
    run_uuid,
    to_json,
    uuid7,
    write_jsonl,
)

__all__ = [
    "DEFAULT_CLUSTER",
    "EU_CATEGORIES",
    "MALFORMED_KINDS",
    "PRODUCER",
    "Catalog",
    "Delivery",
    "Malformed",
    "Source",
    "build_catalog",
    "build_events",
    "deliver",
    "delivery_order",
    "malformed_bodies",
    "post_malformed",
    "run_uuid",
    "to_json",
    "uuid7",
    "write_jsonl",
]
