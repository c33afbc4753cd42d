"""The parts of an event the lineage graph is built from: the datasets it names and its facets.

The intake has every event decoded already (to validate it), so it takes these parts out there,
once, and the warehouse merge reads them as typed columns (``DATASETS`` and ``FACETS`` in
``collectors.lineage.schema``) instead of parsing each payload's JSON again for every step of
the merge. What this module yields is exactly what the merge used to find in the payload:

* ``datasets``: every object of ``inputs`` (direction ``INPUT``), ``outputs`` (``OUTPUT``) and
  the ``dataset`` of a dataset event (``DATASET``), in that order, with its namespace, name and
  the ``version`` facet's ``datasetVersion`` (as text; NULL when absent). ``item`` numbers them
  from 0 in the event. The merge decides which versions a run's outputs get and drops items
  without a namespace or name.
* ``facets``: every entry of ``run.facets`` (place ``run``), ``job.facets`` (``job``), a
  dataset's ``facets`` (``dataset``), an input's ``inputFacets`` (``input``) and an output's
  ``outputFacets`` (``output``), with its item, its name, whether it is a deletion
  (``{"_deleted": true}``) and where its JSON text is in the payload (``start``, 0-based, and
  ``length``, in characters): orjson writes a facet the same inside the event as on its own,
  so the warehouse cuts it out of the payload instead of the spool carrying it twice. (Should
  it not be found, ``facet`` carries the text itself.) The merge keeps the places the event's
  kind has (run facets of run events, job facets of events with a job).
"""

from __future__ import annotations

from typing import Any

import orjson

SIDES = (
    ("inputs", "INPUT", "inputFacets", "input"),
    ("outputs", "OUTPUT", "outputFacets", "output"),
)


def graph_parts(
    event: dict[str, Any], payload: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(datasets, facets)`` of one decoded event whose JSON text (``orjson.dumps``) is
    ``payload``, as the module docstring describes."""
    datasets: list[dict[str, Any]] = []
    facets = _Facets(payload)
    for holder, place in ((event.get("run"), "run"), (event.get("job"), "job")):
        if isinstance(holder, dict):
            facets.add(place, None, holder.get("facets"))
    for side, direction, io_key, io_place in SIDES:
        items = event.get(side)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict):
                    number = _add_dataset(datasets, facets, direction, item)
                    facets.add(io_place, number, item.get(io_key))
    dataset = event.get("dataset")
    if isinstance(dataset, dict):
        _add_dataset(datasets, facets, "DATASET", dataset)
    return datasets, facets.rows


class _Facets:
    """The facet rows of one event, each located in its payload."""

    def __init__(self, payload: str) -> None:
        self.payload = payload
        self.rows: list[dict[str, Any]] = []

    def add(self, place: str, item: int | None, found: Any) -> None:
        if not isinstance(found, dict):
            return
        payload = self.payload
        follows = -1  # where the next entry of this map starts in the payload, once known
        for name, facet in found.items():
            text = orjson.dumps(facet).decode("utf-8")
            # the key before it makes the place unique enough; an equal facet elsewhere has
            # the same text, so whichever is found is the right one
            key = orjson.dumps(name).decode("utf-8") + ":"
            entry = key + text
            if follows >= 0 and payload.startswith(entry, follows):
                at = follows  # the entries of one map are written one after the other
            else:
                at = payload.find(entry)
            follows = at + len(entry) + 1 if at >= 0 else -1  # past the comma
            self.rows.append(
                {
                    "place": place,
                    "item": item,
                    "name": name,
                    "deleted": isinstance(facet, dict) and facet.get("_deleted") is True,
                    "start": at + len(key) if at >= 0 else None,
                    "length": len(text) if at >= 0 else None,
                    "facet": None if at >= 0 else text,
                }
            )


def _add_dataset(
    datasets: list[dict[str, Any]],
    facets: _Facets,
    direction: str,
    item: dict[str, Any],
) -> int:
    number = len(datasets)
    own = item.get("facets")
    version = own.get("version") if isinstance(own, dict) else None
    datasets.append(
        {
            "item": number,
            "direction": direction,
            "namespace": _text(item.get("namespace")),
            "name": _text(item.get("name")),
            "version": _text(version.get("datasetVersion")) if isinstance(version, dict) else None,
        }
    )
    facets.add("dataset", number, own)
    return number


def _text(value: Any) -> str | None:
    """A JSON value as ``json_extract_string`` gives it: strings as they are, NULL for null,
    anything else as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode("utf-8")
