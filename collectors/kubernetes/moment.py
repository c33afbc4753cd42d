"""A snapshot's moment by the API server's clock: the HTTP ``Date`` of its first list response.

The objects' own timestamps (a pod's ``startTime``, a taint's ``timeAdded``) are written by the
cluster's clock, so the moment a snapshot was taken is best told by that clock too: a
collection of a cluster whose clock differs from annex's, or of a replayed past (the
simulator's history), must stamp its slowly changing rows with the server's moment, or a pod
would seem to end before the snapshot that saw it start. ``Date`` has one-second resolution:
when it agrees with the local clock within that (the usual NTP-synchronised case), the local
clock stays the moment (``None`` here), as before.

A server moment far AHEAD of the local clock is refused (``CollectionError``): rows stamped in
the future would be "current" before their time and close every later collection's rows
backwards. A moment in the past is accepted (a replay, a slow clock); the warehouse refuses
one before the cluster's last recorded collection (``warehouse.load``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from annex.errors import CollectionError

AGREEMENT = timedelta(seconds=2)
"""Clocks within this of each other agree: the Date header's resolution, plus a little."""
FUTURE_LIMIT = timedelta(minutes=5)
"""A server moment further than this ahead of the local clock is refused."""


def _utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def parse_http_date(value: str | None) -> datetime | None:
    """An HTTP ``Date`` (RFC 9110 IMF-fixdate, or the obsolete forms) as naive UTC; None when
    absent or unparseable."""
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:  # "-0000": UTC by convention
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


@dataclass
class SnapshotMoment:
    """The ``Date`` of a collection's first list response and the local clock at that instant.

    The lister calls ``observe`` with every response's ``Date``; only the first counts."""

    server_date: str | None = None
    local_at_date: datetime | None = None
    observed: bool = False

    def observe(self, date: str | None, local: datetime | None = None) -> None:
        if self.observed:
            return
        self.observed = True
        self.server_date = date
        self.local_at_date = local or _utc_now()

    def collected_at(self) -> datetime | None:
        """The server's moment when it disagrees with the local clock, else None (use the
        local clock). Raises ``CollectionError`` when it is more than ``FUTURE_LIMIT`` ahead."""
        server = parse_http_date(self.server_date)
        local = self.local_at_date
        if server is None or local is None:
            return None
        if server - local > FUTURE_LIMIT:
            raise CollectionError(
                f"the API server's clock says {server:%Y-%m-%d %H:%M:%S} UTC (its Date header), "
                f"{_minutes(server - local)} ahead of this machine's; annex stamps a snapshot "
                "with the server's moment, and refuses one in the future",
                hint="synchronise the clocks (NTP) of the API server and of the machine "
                "running annex, then collect again",
            )
        if abs(server - local) <= AGREEMENT:
            return None
        return server


def _minutes(delta: timedelta) -> str:
    minutes = delta.total_seconds() / 60
    return f"{minutes:.0f} minutes" if minutes < 120 else f"{minutes / 60:.1f} hours"
