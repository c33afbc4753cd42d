"""`SimulatedCluster`: a world served as a Kubernetes API server on a loopback port.

    with SimulatedCluster(build_world(50)) as cluster:
        cluster.write_kubeconfig(tmp / "kubeconfig")
        ...  # point the kubernetes client or kubectl at it

The server runs in a background thread; leaving the block stops it and closes every open
connection, watch streams included.
"""

from __future__ import annotations

import base64
import copy
import os
import secrets
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from simulator.kubernetes.faults import FaultSet
from simulator.kubernetes.lists import Lister, ListSettings
from simulator.kubernetes.resources import BY_PLURAL
from simulator.kubernetes.server import ApiServer, RequestRecord, _HttpServer
from simulator.kubernetes.store import Store, object_key
from simulator.kubernetes.watch import WatchSettings
from simulator.world import World

TLS_DIRECTORY = Path(__file__).parent / "tls"
TLS_CERTIFICATE = str(TLS_DIRECTORY / "simulator.crt")  # test-only, self-signed, public key pair
TLS_KEY = str(TLS_DIRECTORY / "simulator.key")


class SimulatedCluster:
    """A seeded world behind a faithful-enough Kubernetes API (see reference checklist)."""

    def __init__(
        self,
        world: World,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        *,
        continue_ttl_seconds: float = 300.0,
        rv0_ignores_limit: bool = True,
        bookmark_interval_seconds: float = 1.0,
        too_large_wait_seconds: float = 1.0,
        watch_timeout_seconds: float = 1800.0,
        churn_per_second: float = 0.0,
        tls: bool = False,
    ) -> None:
        self.world = world
        # the simulated clock (epoch seconds) set by `set_clock`; None: the wall clock, as a
        # real API server's Date header
        self._moment: float | None = None
        # what each resource serves since the last `set_clock`: key -> the world's object
        self._served: dict[str, dict[str, dict]] | None = None
        self.token = token or secrets.token_urlsafe(24)
        self.faults = FaultSet(world.seed)
        self.store = Store(world.objects(), world.resource_version)
        self._lister = Lister(
            self.store,
            ListSettings(continue_ttl_seconds, rv0_ignores_limit, too_large_wait_seconds),
        )
        self._api = ApiServer(
            self.store,
            self._lister,
            self.faults,
            self.token,
            WatchSettings(bookmark_interval_seconds, watch_timeout_seconds),
            pod_logs=world.pod_logs,
            clock=world.now.timestamp,  # the world's clock, which its timestamps count from
            date_clock=self._date,
        )
        self._host = host
        self._port = port
        self._http: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._churn_per_second = churn_per_second
        self.tls = tls
        self._churn = None

    # ---- the simulated clock ------------------------------------------------------------

    def _date(self) -> float:
        moment = self._moment
        return time.time() if moment is None else moment

    @property
    def clock(self) -> datetime | None:
        """The simulated moment the cluster serves (None: it serves its world at the wall
        clock, as built)."""
        return None if self._moment is None else datetime.fromtimestamp(self._moment, UTC)

    def set_clock(self, moment: datetime, objects: dict[str, list[dict]]) -> int:
        """Serve ``objects`` (``WorldHistory.objects_at(moment)``) as the cluster's state at
        ``moment``: lists return them, the HTTP ``Date`` header says ``moment``, and pod logs
        count to it. Objects that changed since the last state are written again and those
        no longer there deleted, so resourceVersions only grow and watchers see the changes
        in order (an object counts as unchanged when it is the same dict as before).
        Returns how many objects were written or deleted."""
        if self._served is None:
            self._served = {
                plural: {object_key(BY_PLURAL[plural], obj): obj for obj in items}
                for plural, items in self.world.objects().items()
            }
        changes = 0
        for plural, items in objects.items():
            resource = BY_PLURAL[plural]
            served = self._served.setdefault(plural, {})
            wanted = {object_key(resource, obj): obj for obj in items}
            for key in sorted(served.keys() - wanted.keys()):
                self.store.delete(plural, key)
                del served[key]
                changes += 1
            for key in sorted(wanted):
                obj = wanted[key]
                if served.get(key) is not obj:
                    self.store.put(plural, obj)
                    served[key] = obj
                    changes += 1
        self._moment = moment.timestamp()
        self._api.clock = self._date
        return changes

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> SimulatedCluster:
        if self._http is not None:
            return self
        context = None
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(TLS_CERTIFICATE, TLS_KEY)
        self._http = _HttpServer((self._host, self._port), self._api, context)
        host, port = self._http.server_address[:2]
        self._api.address = f"{host}:{port}"
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"simulated-kube-apiserver:{port}",
            daemon=True,
        )
        self._thread.start()
        if self._churn_per_second > 0:
            from simulator.kubernetes.churn import Churn

            self._churn = Churn(self, self._churn_per_second)
            self._churn.start()
        return self

    def stop(self) -> None:
        if self._http is None:
            return
        if self._churn is not None:
            self._churn.stop()
        self._api.stopping.set()
        self._http.shutdown()
        self._http.close_connections()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._http = None

    def __enter__(self) -> SimulatedCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- where and how to connect -------------------------------------------------------

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("the simulated cluster is not running; use start() or `with`")
        host, port = self._http.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def write_kubeconfig(
        self, path: str | os.PathLike, context: str = "annex-sim", cluster_name: str = "annex-sim"
    ) -> Path:
        """A kubeconfig for this server with a bearer-token user, readable by its owner only.

        kubectl (client-go) sends the token only over TLS: start the cluster with `tls=True`
        for kubectl. The kubernetes Python client sends it over plain HTTP as well.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        authority = ""
        if self.tls:
            pem = Path(TLS_CERTIFICATE).read_bytes()
            authority = f"    certificate-authority-data: {base64.b64encode(pem).decode()}\n"
        text = (
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters:\n"
            f"- name: {cluster_name}\n"
            "  cluster:\n"
            f"{authority}"
            f"    server: {self.url}\n"
            "contexts:\n"
            f"- name: {context}\n"
            "  context:\n"
            f"    cluster: {cluster_name}\n"
            f"    user: {cluster_name}-user\n"
            f"current-context: {context}\n"
            "preferences: {}\n"
            "users:\n"
            f"- name: {cluster_name}-user\n"
            "  user:\n"
            f"    token: {self.token}\n"
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        return path

    # ---- test hooks -----------------------------------------------------------------------

    def expire_continue_tokens(self) -> None:
        """Compaction: every continue token issued so far answers 410 Expired from now on."""
        self._lister.expire_tokens()

    @property
    def requests(self) -> list[RequestRecord]:
        return self._api.requests()

    def clear_requests(self) -> None:
        self._api.clear_requests()

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def counts(self) -> dict[str, int]:
        """Live object counts per resource."""
        return self.store.counts()

    def objects(self, resource: str) -> list[dict]:
        """The live objects of a resource (item form), in list order."""
        return self.store.live_objects(resource)

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict | None:
        version = self.store.get(resource, self._key(resource, name, namespace))
        return copy.deepcopy(version.obj) if version else None

    # ---- changes: each bumps the global RV; lists and watches see them --------------------

    def put(self, resource: str, obj: dict) -> dict:
        """Create or replace an object (ADDED or MODIFIED)."""
        return self.store.put(resource, obj)

    def mutate(
        self,
        resource: str,
        name: str,
        change: Callable[[dict], object],
        namespace: str | None = None,
    ) -> dict:
        """Apply `change` to a copy of the object: MODIFIED.

        `change` edits the copy in place; if it returns a dict, that dict is stored instead.
        """
        current = self.get(resource, name, namespace)
        if current is None:
            raise KeyError(f"{resource} {namespace + '/' if namespace else ''}{name} not found")
        changed = change(current)
        return self.store.put(resource, changed if isinstance(changed, dict) else current)

    def delete(self, resource: str, name: str, namespace: str | None = None) -> dict | None:
        """Delete an object (DELETED); returns its last state, or None if it was not there."""
        return self.store.delete(resource, self._key(resource, name, namespace))

    @staticmethod
    def _key(resource: str, name: str, namespace: str | None) -> str:
        if BY_PLURAL[resource].namespaced:
            return f"{namespace or 'default'}/{name}"
        return name
