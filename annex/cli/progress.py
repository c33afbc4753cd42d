"""Progress display for long collections: one bar per Kubernetes resource list.

A collection of a 7,500-node cluster lists ~75,000 pods in ~150 pages; the operator should see
that it is moving, how far it has got, and when it is waiting for another writer.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class CollectionProgress:
    """Rich progress bars fed by the collector's per-page callback (``on_page``)."""

    def __init__(self, *, cluster: str, enabled: bool = True) -> None:
        self.cluster = cluster
        self.enabled = enabled
        self.console = Console(file=sys.stderr)
        self._progress = Progress(
            TextColumn("[bold]{task.description:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[pages]} pages"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
            disable=not enabled,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> CollectionProgress:
        if self.enabled:
            self.console.print(f"collecting cluster [bold]{self.cluster}[/bold]")
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)

    def on_page(self, stats: Any) -> None:
        """Called by the collector after each page: resource, items so far, remaining if known."""
        resource = getattr(stats, "resource", "objects")
        items = int(getattr(stats, "items", 0))
        remaining = getattr(stats, "remaining", None)
        total = items + int(remaining) if remaining is not None else None
        task = self._tasks.get(resource)
        if task is None:
            task = self._progress.add_task(resource, total=total, pages=0)
            self._tasks[resource] = task
        if total is None and getattr(stats, "done", False):
            total = items
        self._progress.update(
            task, completed=items, total=total, pages=int(getattr(stats, "pages", 0))
        )

    def on_wait(self, message: str) -> None:
        """Called by the warehouse when another writer holds the lock."""
        self.console.print(f"[yellow]{message}[/yellow]")
