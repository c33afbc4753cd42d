"""annex's settings: one TOML file plus environment overrides, validated on load.

Where the file is found, first match wins:
  1. the ``--config`` option of the CLI (passed here as ``path``),
  2. the ``ANNEX_CONFIG`` environment variable,
  3. ``./annex.toml`` if it exists,
  4. none: built-in defaults only.

Environment overrides (applied after the file, before validation):
  * ``ANNEX_WAREHOUSE``           → ``warehouse.path`` (the documented short form)
  * ``ANNEX_<SECTION>__<KEY>``    → ``<section>.<key>``, e.g. ``ANNEX_KUBERNETES__PAGE_SIZE=1000``.
    The value is read as a TOML value when it parses as one (numbers, booleans, arrays),
    otherwise as a plain string.

Every validation error names the key (``kubernetes.page_size``), the offending value and what
is allowed, and says where the value came from (the file or the environment variable). Secrets
(tokens) are never read from this file: they come from the kubeconfig, the in-cluster service
account, or environment variables named in the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annex.errors import ConfigError

DEFAULT_CONFIG_FILE = "annex.toml"

# Failure-domain label profiles, top (broadest) level first, ending at the node. Each level is
# a list of label keys: the first one a node carries gives that level's value (so deprecated
# keys can stand behind current ones). Sources: reference/kubernetes-api.md §6.
TOPOLOGY_PRESETS: dict[str, tuple[tuple[str, ...], ...]] = {
    "generic": (
        ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"),
        ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
        ("kubernetes.io/hostname",),
    ),
    "azure": (
        ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"),
        ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
        ("kubernetes.io/hostname",),
    ),
    "gke": (
        ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
        ("cloud.google.com/gce-topology-block",),
        ("cloud.google.com/gce-topology-subblock",),
        ("cloud.google.com/gce-topology-host",),
        ("kubernetes.io/hostname",),
    ),
    "eks": (
        ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
        ("topology.k8s.aws/network-node-layer-1",),
        ("topology.k8s.aws/network-node-layer-2",),
        ("topology.k8s.aws/network-node-layer-3",),
        ("kubernetes.io/hostname",),
    ),
    "oci": (
        ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
        ("oci.oraclecloud.com/fault-domain",),
        ("kubernetes.io/hostname",),
    ),
    "nvidia-topograph-v0": (
        ("network.topology.nvidia.com/spine",),
        ("network.topology.nvidia.com/block", "network.topology.nvidia.com/leaf"),
        ("kubernetes.io/hostname",),
    ),
    "nvidia-topograph-v1": (
        ("fabric.topograph.run/tier-2",),
        ("fabric.topograph.run/tier-1",),
        ("kubernetes.io/hostname",),
    ),
    "nvlink": (
        ("nvidia.com/gpu.clique",),
        ("kubernetes.io/hostname",),
    ),
}

HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class WarehouseSettings:
    path: Path = Path("annex.duckdb")
    published_path: Path | None = None
    """The read-only analyst copy; default ``<path without .duckdb>.published.duckdb``."""
    lock_timeout_seconds: float = 600.0
    """How long a writer waits for another writer before giving up with an error."""
    memory_limit: str | None = None
    """DuckDB's ``memory_limit`` for every connection annex opens, as DuckDB spells it (``"4GB"``,
    ``"2GiB"``, ``"50%"`` of RAM); past it DuckDB spills to a ``.tmp`` folder beside the file
    instead of growing. None: DuckDB's default, 80% of RAM, which a shared machine may not
    have to spare (how much a large collection takes, with and without a cap: deploy/RUNBOOK.md,
    Memory)."""

    @property
    def resolved_published_path(self) -> Path:
        if self.published_path is not None:
            return self.published_path
        return self.path.with_name(self.path.stem + ".published.duckdb")


@dataclass(frozen=True)
class BalloonRule:
    """Which pods are placeholders ("balloons") that reserve capacity rather than use it."""

    priority_below: int = 0
    """A pod whose priority is below this value is a balloon (upstream's example uses -1000;
    Cluster Autoscaler treats priority below -10 as expendable)."""
    priority_classes: tuple[str, ...] = ("placeholder", "overprovisioning", "balloon")
    """PriorityClass names whose pods are balloons whatever their priority."""


@dataclass(frozen=True)
class KubernetesSettings:
    page_size: int = 500
    request_timeout_seconds: float = 120.0
    connect_timeout_seconds: float = 5.0
    max_list_restarts: int = 2
    """How often a list that lost its snapshot (410 Expired) is restarted before annex accepts
    the server's inconsistent continuation and marks the snapshot inconsistent."""
    max_retries: int = 6
    """Retries of one request on 429 / 5xx / connection errors, with capped jittered backoff."""
    max_backoff_seconds: float = 30.0
    topology_profile: str = "generic"
    balloons: BalloonRule = field(default_factory=BalloonRule)
    pool_labels: tuple[str, ...] = ()
    """Node labels that name a node's pool on this cluster, tried in order before the managed
    services' own (GKE, EKS, Karpenter, AKS, OKE, ...: ``collectors.kubernetes.decode``
    ``POOL_LABELS``): an on-premises cluster's convention, such as ``acme.com/pool``."""
    list_deadline_seconds: float = 900.0
    """The most one list may take, all its pages, retries and waits included; past it the
    collection fails (and never holds the writer lock meanwhile: the lock is taken to load)."""
    response_deadline_seconds: float = 300.0
    """The most one response body may take to arrive whole: a body trickled slower fails (a
    read timeout alone never fires while a byte arrives now and then)."""
    max_response_bytes: int = 256 * 1024 * 1024
    """The most one list page (or one watch event) may inflate to: gzip is inflated as a stream
    and refused past this, so a small compressed body cannot exhaust memory."""


@dataclass(frozen=True)
class TelemetrySettings:
    """DCGM telemetry: scraped from exporters or read from Prometheus' range API."""

    step_seconds: int = 60
    """Resolution of range queries (one sample per series per step)."""
    window_seconds: int = 3600
    """How far back a scheduled collection reads (overlaps are loaded once)."""
    max_points_per_series: int = 11_000
    """Prometheus refuses range queries above 11,000 points per series: windows are cut below."""
    request_timeout_seconds: float = 30.0
    max_response_bytes: int = 512 * 1024 * 1024
    """A response larger than this is refused rather than read into memory."""
    window_end: datetime | None = None
    """Read the window ending at this moment (UTC, rounded down to the step) instead of now:
    for a backfill, or for reading the evidence of a given moment again; ``annex demo`` sets
    its simulated world's present, so a rerun reads the same samples. None: now."""


@dataclass(frozen=True)
class GpubenchSettings:
    """Where annex finds the benchmark probes' pods and how it judges their records."""

    namespace: str = "annex-probes"
    label_selector: str = "app.kubernetes.io/name=annex-gpubench"
    max_log_bytes: int = 16 * 1024 * 1024
    max_line_bytes: int = 64 * 1024
    peak_tolerance: float = 1.05
    """A record whose achieved throughput exceeds the dense peak times this is rejected."""


@dataclass(frozen=True)
class ClusterSettings:
    name: str
    kubeconfig: Path | None = None
    context: str | None = None
    in_cluster: bool = False
    topology_profile: str | None = None
    """Overrides ``kubernetes.topology_profile`` for this cluster."""
    prometheus_url: str | None = None
    """Prometheus (or a compatible API) holding this cluster's DCGM exporter series."""
    prometheus_token_env: str | None = None
    """Name of the environment variable holding Prometheus' bearer token (never the token)."""
    prometheus_username: str | None = None
    """User name for Prometheus' own basic auth (``--web.config.file`` ``basic_auth_users``)."""
    prometheus_password_env: str | None = None
    """Name of the environment variable holding that user's password (never the password).
    Basic auth and a bearer token exclude each other."""
    dcgm_exporter_urls: tuple[str, ...] = ()
    """Exporter ``/metrics`` URLs to scrape; ``{node}`` expands to each GPU node's name."""


ATTESTATION_PROVIDERS: dict[str, tuple[str, ...]] = {
    "nvidia-nras": ("ES384",),
    "azure-maa": ("RS256",),
    "intel-ita": ("PS384", "RS256"),
    "nvidia-local": ("HS256",),
}
"""Each attestation provider with the signature algorithms annex accepts from it (reference
attestation.md §1.2, §2, §3). One algorithm is fixed per configured issuer: a token whose header
names another is refused, which closes algorithm confusion (HS256 keyed with a public key)."""


@dataclass(frozen=True)
class AttestationIssuer:
    """One verifier annex trusts (NRAS, an MAA tenant, ITA) or a self-reporting local verifier.

    Keys are pinned here, never taken from a token: ``jwks_file`` (a key set on disk) or
    ``jwks_url`` (fetched by annex from this configured address and cached). ``roots_file`` holds
    the PEM trust anchors that the keys' ``x5c`` chains must reach, optionally followed by PEM
    CRLs (``-----BEGIN X509 CRL-----``) of those anchors or intermediates: a certificate a CRL
    lists is untrusted.
    """

    name: str
    provider: str
    issuer: str
    """The exact ``iss`` claim (no prefix or substring match)."""
    algorithm: str
    jwks_file: Path | None = None
    jwks_url: str | None = None
    roots_file: Path | None = None
    max_age_seconds: int = 3600
    """A token counts for at most this long after its ``iat`` (an 8 h MAA token must not cover
    8 h): ``valid_until = min(exp, iat + max_age_seconds)``."""
    secret_env: str | None = None
    """nvidia-local only: names the variable holding the HS256 secret used to decode (never to
    trust) self-reported tokens."""


@dataclass(frozen=True)
class AttestationPolicy:
    """The appraisal policy applied to verified claims; its ``sha256()`` is stored per record."""

    policy_id: str = "annex-default-v1"
    require_secure_boot: bool = True
    allow_debug: bool = False
    gpu_driver_versions: tuple[str, ...] = ()
    """Allowed GPU driver versions; empty = any."""
    gpu_vbios_versions: tuple[str, ...] = ()
    """Allowed VBIOS versions; empty = any."""
    nvidia_claims_versions: tuple[str, ...] = ("2.0", "3.0")
    cvm_compliance_status: tuple[str, ...] = ("azure-compliant-cvm",)
    sevsnp_launch_measurements: tuple[str, ...] = ()
    """Allowed SEV-SNP launch measurements (hex, compared case-insensitively); empty = any."""
    sevsnp_host_data: tuple[str, ...] = ()
    tdx_mrtd: tuple[str, ...] = ()
    ita_tcb_status: tuple[str, ...] = ("UpToDate",)

    def canonical_json(self) -> str:
        """The policy as JSON with sorted keys and no whitespace: what ``sha256`` hashes."""
        values = {name: _jsonable(value) for name, value in vars(self).items()}
        return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def sha256(self) -> str:
        """Hex SHA-256 of ``canonical_json()``: names the policy a verdict was reached under."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class AttestationSettings:
    """Confidential-computing evidence: trusted issuers, appraisal policy, nonces, limits."""

    issuers: tuple[AttestationIssuer, ...] = ()
    policy: AttestationPolicy = field(default_factory=AttestationPolicy)
    leeway_seconds: int = 60
    """Clock skew tolerated on ``exp``/``nbf``/``iat``."""
    nonce_ttl_seconds: int = 600
    nonce_key_env: str = "ANNEX_ATTESTATION_NONCE_KEY"
    """Names the variable holding the nonce HMAC key (>= 32 bytes); unset = no collector nonces."""
    spool_dir: Path = Path("attestations")
    """The intake writes ``<spool_dir>/incoming/``; collections archive to ``archive/<day>/``."""
    watch_dirs: tuple[Path, ...] = ()
    """Extra folders of bare submission files (a DaemonSet's output on a shared volume)."""
    max_submission_bytes: int = 1 << 20
    max_token_bytes: int = 64 << 10
    max_submods: int = 16
    max_x5c_certs: int = 4
    jwks_cache_dir: Path = Path(".annex-cache/jwks")
    jwks_cache_seconds: int = 3600

    def issuer(self, name: str) -> AttestationIssuer:
        for issuer in self.issuers:
            if issuer.name == name:
                return issuer
        known = ", ".join(i.name for i in self.issuers) or "none"
        raise ConfigError(
            f"no attestation issuer named {name!r} (configured: {known})",
            hint="add an [[attestation.issuers]] entry with that name",
        )


@dataclass(frozen=True)
class LineageSettings:
    """OpenLineage events: the intake's spool, watched folders of JSON-lines files, limits."""

    spool_dir: Path = Path("lineage")
    """The intake writes ``<spool_dir>/incoming/``; collections archive to ``archive/<day>/``."""
    watch_dirs: tuple[Path, ...] = ()
    """Extra folders of JSON-lines event files (``*.jsonl``) a producer writes to a volume."""
    max_body_bytes: int = 5 << 20
    """Largest request body after decompression (counted while inflating), and on the wire."""
    max_events: int = 1000
    """Most events in one ``/api/v1/lineage/batch`` request."""
    intake_workers: int = 2
    """Processes that validate the intake's requests (validation is CPU-bound Python: one
    process uses one core); 0 validates in the request's thread."""


@dataclass(frozen=True)
class ServeSettings:
    """``annex serve``: the HTTPS intake endpoints (attestations, OpenLineage events)."""

    host: str = "127.0.0.1"
    port: int = 8443
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    token_env: str = "ANNEX_INTAKE_TOKEN"
    """Names the variable holding the bearer token clients must send (never the token)."""
    max_body_bytes: int = 5 << 20
    """The server's cap on any request body; each endpoint may only lower it (attestations:
    ``attestation.max_submission_bytes``, lineage: ``lineage.max_body_bytes``)."""
    max_connections: int = 512
    """Authenticated connections served at once (one thread each); one more gets 503."""
    max_pending_connections: int = 256
    """Connections not yet authenticated (TLS handshake, request head) held at once; a new
    one then closes the one pending longest."""
    max_pending_per_client: int = 32
    """Pending connections one client (an IPv4 address, an IPv6 /64) may hold; more are
    closed at accept."""
    head_timeout_seconds: float = 10.0
    """Overall deadline from accept to the end of the request head (TLS handshake included),
    however slowly the bytes arrive; then 408 and close."""
    max_header_bytes: int = 32 << 10
    """Cap on the request head (request line and header fields); beyond it 431 and close."""
    max_header_fields: int = 100
    """Cap on the number of header fields; beyond it 431 and close."""
    body_timeout_seconds: float = 300.0
    """Overall deadline for reading one request body (after authentication); then 408."""


@dataclass(frozen=True)
class ModelRegistrySettings:
    """``[models]``: the folder of model metadata files (one YAML per model)."""

    dir: Path = Path("models")


@dataclass(frozen=True)
class ExportSettings:
    """``[export]``: where the Dagster export job writes ``annex export``'s Parquet."""

    dir: Path | None = None
    """The export folder; None: ``export/`` beside the warehouse file."""

    def resolved_dir(self, warehouse: WarehouseSettings) -> Path:
        return self.dir if self.dir is not None else Path(warehouse.path).parent / "export"


@dataclass(frozen=True)
class ReportsSettings:
    """``[reports]``: how rendered documents are signed and how long their record is kept.

    Signing is optional: with ``signing_key`` and ``signing_certificate`` (PEM files) every
    rendered PDF gets a PAdES signature (B-B; B-T with ``timestamp_url``). The key's passphrase
    is read from the environment variable named by ``signing_passphrase_env`` when a report is
    signed, never from this file, and is never logged or stored."""

    signing_key: Path | None = None
    signing_certificate: Path | None = None
    signing_passphrase_env: str | None = None
    timestamp_url: str | None = None
    """An RFC 3161 timestamp server: the signature becomes PAdES B-T."""
    retention_years: int = 10
    """audit.documents rows (and the kept files) are kept at least this long."""

    @property
    def signs(self) -> bool:
        return self.signing_key is not None


@dataclass(frozen=True)
class RetentionSettings:
    """``[retention]``: how many days raw rows stay in DuckDB at full resolution, per table family,
    before ``annex warehouse compact`` moves them to Parquet (``warehouse.compaction``).

    Only raw rows whose figures are derived elsewhere are compacted: the telemetry samples
    (rolled up hourly and daily), the Kubernetes collections' raw rows (merged into ``core``'s
    versions and intervals) and the request logs of ``audit``. Kept forever, never compacted:
    the hourly and daily rollups (``marts.gpu_hourly``, ``marts.gpu_daily``, ...), intervals and
    versions (``core.gpu_allocations``, ``core.nodes``, ...), verdicts, and every fact a
    rendered document cites (``audit.report_versions`` and what it points to). Compacted rows
    stay readable in ``annex sql`` through the ``archive`` views."""

    telemetry_days: int = 7
    """``core.gpu_telemetry_samples`` (the rollups keep every figure). Seven days keep a year of
    a 60,000-GPU fleet under 100 GB (``python -m bench.year``: about 10 GB per day of raw
    samples at 21 DCGM fields a minute; 14 days would be about 165 GB)."""
    kubernetes_days: int = 30
    """``raw.kubernetes_*``: the collections' rows as listed (``core`` keeps the history)."""
    lineage_days: int = 400
    """Lineage event bodies (``core.lineage_events.payload``): moved to Parquet once the lineage
    refresh took their events in; the events' rows stay (``archive.lineage_events``,
    ``archive.lineage_facets`` read the bodies back)."""
    attestation_days: int = 400
    """Attestation tokens as received: ``core.attestation_records.claims`` and the archived
    submission files, moved to Parquet once the coverage refresh took them in; records and
    verdicts stay (``archive.attestation_records``, ``archive.attestation_submission_files``)."""
    audit_days: int = 90
    """``audit.kubernetes_requests`` and ``audit.telemetry_targets`` (request logs); at least 8,
    as ``marts.kubernetes_api_latency`` reads the last 7 days."""
    dir: Path | None = None
    """Where compacted partitions go; None: ``archive/`` beside the warehouse file."""

    def resolved_dir(self, warehouse: WarehouseSettings) -> Path:
        folder = self.dir if self.dir is not None else Path(warehouse.path).parent / "archive"
        return folder.absolute()

    def days(self, family: str) -> int:
        """The retention of a table family (``telemetry``, ``kubernetes``, ...)."""
        return int(getattr(self, f"{family}_days"))


@dataclass(frozen=True)
class ComputeSettings:
    """``[compute]``: the factors of the training compute and energy figures."""

    pue: float = 1.2
    """Power usage effectiveness of the data centre (facility energy / IT energy)."""
    server_overhead: float = 1.82
    """Server power over GPU power (host CPUs, memory, network); ≈1.82 for DGX-class nodes."""
    power_fraction: float = 1.0
    """Share of TDP a training GPU draws, for the TDP-based figures."""
    default_mfu: float = 0.35
    """Utilisation assumed where neither telemetry nor benchmarks give one."""
    disagreement_margin: float = 0.30
    """Flag hardware- and architecture-based compute differing by more than this share."""
    as_of: datetime | None = None
    """Assess compute as of this moment (UTC) instead of the refresh time: open allocations are
    counted up to it and projections start from it. For reproducing an assessment on the
    evidence of a given moment; ``annex demo`` sets its simulated world's present, so a rerun
    on the same warehouse gives the same figures. None: the refresh time."""


@dataclass(frozen=True)
class Settings:
    warehouse: WarehouseSettings = field(default_factory=WarehouseSettings)
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    gpubench: GpubenchSettings = field(default_factory=GpubenchSettings)
    clusters: tuple[ClusterSettings, ...] = ()
    attestation: AttestationSettings = field(default_factory=AttestationSettings)
    lineage: LineageSettings = field(default_factory=LineageSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    models: ModelRegistrySettings = field(default_factory=ModelRegistrySettings)
    compute: ComputeSettings = field(default_factory=ComputeSettings)
    export: ExportSettings = field(default_factory=ExportSettings)
    reports: ReportsSettings = field(default_factory=ReportsSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    topology_profiles: Mapping[str, tuple[tuple[str, ...], ...]] = field(
        default_factory=lambda: dict(TOPOLOGY_PRESETS)
    )
    source: str = "defaults"
    """Where these settings came from, for messages."""

    def cluster(self, name: str) -> ClusterSettings:
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        known = ", ".join(c.name for c in self.clusters) or "none"
        raise ConfigError(
            f"no cluster named {name!r} in {self.source} (configured: {known})",
            hint="add a [[clusters]] entry with that name, or pass --kubeconfig/--context",
        )

    def topology_levels(self, profile: str) -> tuple[tuple[str, ...], ...]:
        try:
            return self.topology_profiles[profile]
        except KeyError:
            raise ConfigError(
                f"unknown topology profile {profile!r}",
                hint="use one of: " + ", ".join(sorted(self.topology_profiles)),
            ) from None


# ---------------------------------------------------------------------------------------------
# Loading


def load_settings(
    path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Read, override and validate the settings. Raises ``ConfigError`` naming the bad key."""
    env = os.environ if env is None else env
    config_path = _find_config_file(path, env)
    raw: dict[str, Any] = {}
    origin: dict[str, str] = {}
    source = "defaults"
    if config_path is not None:
        source = str(config_path)
        try:
            raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(
                f"configuration file {config_path} does not exist",
                hint="create it (see annex.example.toml) or drop --config / ANNEX_CONFIG",
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{config_path} is not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read configuration file {config_path}: {exc}") from None
    _apply_env_overrides(raw, env, origin)
    return _validate(raw, source=source, origin=origin, base=config_path)


def _find_config_file(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    if path is not None:
        return Path(path).expanduser()
    if env.get("ANNEX_CONFIG"):
        return Path(env["ANNEX_CONFIG"]).expanduser()
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.exists() else None


def _apply_env_overrides(
    raw: dict[str, Any], env: Mapping[str, str], origin: dict[str, str]
) -> None:
    for name, value in sorted(env.items()):
        if name == "ANNEX_WAREHOUSE":
            raw.setdefault("warehouse", {})["path"] = value
            origin["warehouse.path"] = "environment variable ANNEX_WAREHOUSE"
            continue
        if not name.startswith("ANNEX_") or "__" not in name:
            continue
        section, _, key = name[len("ANNEX_") :].lower().partition("__")
        if not section or not key:
            continue
        parts = [section, *key.split("__")]
        target = raw
        for part in parts[:-1]:
            node = target.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(
                    f"environment variable {name} overrides {'.'.join(parts)}, "
                    f"but {part!r} is not a table in the configuration"
                )
            target = node
        target[parts[-1]] = _parse_env_value(value)
        origin[".".join(parts)] = f"environment variable {name}"


def _parse_env_value(value: str) -> Any:
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return value


def _utc_moment(reader: _Reader, name: str) -> datetime | None:
    """A TOML date-time with an offset (``2026-11-28T15:00:00Z``) as naive UTC, or None."""
    value = reader.get(name, datetime, None)
    if value is None:
        return None
    if value.tzinfo is None:
        raise reader.error(reader.key(name), value, "must carry a UTC offset (e.g. ...Z)")
    return value.astimezone(UTC).replace(tzinfo=None)


class _Reader:
    """Reads one table of the raw config, reporting errors with the full key path."""

    def __init__(
        self, table: Any, prefix: str, source: str, origin: Mapping[str, str], base: Path | None
    ) -> None:
        self.prefix = prefix
        self.source = source
        self.origin = origin
        self.base = base
        if table is None:
            table = {}
        if not isinstance(table, dict):
            raise self.error(prefix, table, "must be a table")
        self.table = table
        self.seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, key: str, value: Any, problem: str) -> ConfigError:
        where = self.origin.get(key, self.source)
        return ConfigError(f"{key} = {value!r} {problem} (in {where})")

    def get(self, name: str, kind: type, default: Any) -> Any:
        self.seen.add(name)
        if name not in self.table:
            return default
        value = self.table[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is int and isinstance(value, bool):
            raise self.error(self.key(name), value, "must be an integer")
        if not isinstance(value, kind):
            raise self.error(self.key(name), value, f"must be {_kind_name(kind)}")
        return value

    def number(self, name: str, kind: type, default: Any, *, minimum: float, maximum: float) -> Any:
        value = self.get(name, kind, default)
        if not minimum <= value <= maximum:
            raise self.error(self.key(name), value, f"must be between {minimum} and {maximum}")
        return value

    def path(self, name: str, default: Path | None) -> Path | None:
        value = self.get(name, str, None)
        if value is None:
            return default
        if not value.strip():
            raise self.error(self.key(name), value, "must not be empty")
        return Path(value).expanduser()

    def strings(self, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.get(name, list, None)
        if value is None:
            return default
        if not all(isinstance(item, str) and item for item in value):
            raise self.error(self.key(name), value, "must be a list of non-empty strings")
        return tuple(value)

    def finish(self) -> None:
        unknown = sorted(set(self.table) - self.seen)
        if unknown:
            key = self.key(unknown[0])
            allowed = ", ".join(sorted(self.seen))
            raise ConfigError(
                f"unknown setting {key} (in {self.origin.get(key, self.source)})",
                hint=f"settings allowed here: {allowed}",
            )


def _kind_name(kind: type) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true or false",
        list: "a list",
        dict: "a table",
        datetime: "a date-time (e.g. 2026-11-28T15:00:00Z)",
    }[kind]


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT])(i?)B\s*", re.IGNORECASE)
_SHARE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")
MIN_MEMORY_LIMIT_BYTES = 256 << 20
"""The smallest ``warehouse.memory_limit`` annex accepts: a cap below it is a typo."""
MEMORY_LIMIT_FORMS = (
    'a size such as "4GB" or "2GiB" (at least 256MiB), or a share of RAM such as "50%"'
)
"""What ``warehouse.memory_limit`` accepts, in the words of every message about it."""


def _memory_limit(reader: _Reader) -> str | None:
    """``warehouse.memory_limit`` as DuckDB takes it: a size (decimal or binary units) of at
    least ``MIN_MEMORY_LIMIT_BYTES``, or a share of RAM from 1% to 100%."""
    value = reader.get("memory_limit", str, None)
    if value is None:
        return None
    share, size = _SHARE.fullmatch(value), _SIZE.fullmatch(value)
    if share is not None:
        if not 1 <= float(share.group(1)) <= 100:
            raise reader.error("warehouse.memory_limit", value, "must be between 1% and 100%")
    elif size is not None:
        power = "KMGT".index(size.group(2).upper()) + 1
        unit = 1024**power if size.group(3) else 1000**power
        if float(size.group(1)) * unit < MIN_MEMORY_LIMIT_BYTES:
            raise reader.error("warehouse.memory_limit", value, "must be at least 256MiB")
    else:
        raise reader.error("warehouse.memory_limit", value, f"must be {MEMORY_LIMIT_FORMS}")
    return value.strip()


def _validate(
    raw: dict[str, Any], *, source: str, origin: Mapping[str, str], base: Path | None
) -> Settings:
    top = _Reader(raw, "", source, origin, base)

    wh = _Reader(top.get("warehouse", dict, {}), "warehouse", source, origin, base)
    warehouse = WarehouseSettings(
        path=wh.path("path", WarehouseSettings.path),
        published_path=wh.path("published_path", None),
        lock_timeout_seconds=wh.number(
            "lock_timeout_seconds", float, 600.0, minimum=0, maximum=86_400
        ),
        memory_limit=_memory_limit(wh),
    )
    wh.finish()

    topo = _Reader(top.get("topology", dict, {}), "topology", source, origin, base)
    profiles: dict[str, tuple[tuple[str, ...], ...]] = dict(TOPOLOGY_PRESETS)
    custom = _Reader(topo.get("profiles", dict, {}), "topology.profiles", source, origin, base)
    for name in list(custom.table):
        profiles[name] = _topology_profile(custom, name)
    topo.finish()

    k8s = _Reader(top.get("kubernetes", dict, {}), "kubernetes", source, origin, base)
    balloon_reader = _Reader(
        k8s.get("balloons", dict, {}), "kubernetes.balloons", source, origin, base
    )
    balloons = BalloonRule(
        priority_below=balloon_reader.number(
            "priority_below", int, 0, minimum=-2_147_483_648, maximum=2_000_001_000
        ),
        priority_classes=balloon_reader.strings("priority_classes", BalloonRule.priority_classes),
    )
    balloon_reader.finish()
    kubernetes = KubernetesSettings(
        page_size=k8s.number("page_size", int, 500, minimum=10, maximum=10_000),
        request_timeout_seconds=k8s.number(
            "request_timeout_seconds", float, 120.0, minimum=1, maximum=3600
        ),
        connect_timeout_seconds=k8s.number(
            "connect_timeout_seconds", float, 5.0, minimum=0.1, maximum=300
        ),
        max_list_restarts=k8s.number("max_list_restarts", int, 2, minimum=0, maximum=20),
        max_retries=k8s.number("max_retries", int, 6, minimum=0, maximum=50),
        max_backoff_seconds=k8s.number("max_backoff_seconds", float, 30.0, minimum=0, maximum=600),
        topology_profile=k8s.get("topology_profile", str, "generic"),
        balloons=balloons,
        pool_labels=tuple(k8s.strings("pool_labels", ())),
        list_deadline_seconds=k8s.number(
            "list_deadline_seconds", float, 900.0, minimum=1, maximum=86_400
        ),
        response_deadline_seconds=k8s.number(
            "response_deadline_seconds", float, 300.0, minimum=1, maximum=86_400
        ),
        max_response_bytes=k8s.number(
            "max_response_bytes", int, 256 * 1024 * 1024, minimum=1 << 16, maximum=1 << 34
        ),
    )
    if kubernetes.topology_profile not in profiles:
        raise k8s.error(
            "kubernetes.topology_profile",
            kubernetes.topology_profile,
            "is not a known topology profile; known: " + ", ".join(sorted(profiles)),
        )
    k8s.finish()

    tel = _Reader(top.get("telemetry", dict, {}), "telemetry", source, origin, base)
    telemetry = TelemetrySettings(
        step_seconds=tel.number("step_seconds", int, 60, minimum=1, maximum=3600),
        window_seconds=tel.number("window_seconds", int, 3600, minimum=60, maximum=31 * 86_400),
        max_points_per_series=tel.number(
            "max_points_per_series", int, 11_000, minimum=10, maximum=11_000
        ),
        request_timeout_seconds=tel.number(
            "request_timeout_seconds", float, 30.0, minimum=1, maximum=3600
        ),
        max_response_bytes=tel.number(
            "max_response_bytes", int, 512 * 1024 * 1024, minimum=1024, maximum=1 << 36
        ),
        window_end=_utc_moment(tel, "window_end"),
    )
    tel.finish()

    bench = _Reader(top.get("gpubench", dict, {}), "gpubench", source, origin, base)
    gpubench = GpubenchSettings(
        namespace=bench.get("namespace", str, "annex-probes"),
        label_selector=bench.get("label_selector", str, "app.kubernetes.io/name=annex-gpubench"),
        max_log_bytes=bench.number(
            "max_log_bytes", int, 16 * 1024 * 1024, minimum=1024, maximum=1 << 30
        ),
        max_line_bytes=bench.number(
            "max_line_bytes", int, 64 * 1024, minimum=256, maximum=16 * 1024 * 1024
        ),
        peak_tolerance=bench.number("peak_tolerance", float, 1.05, minimum=1.0, maximum=2.0),
    )
    if not gpubench.namespace or not gpubench.label_selector:
        raise bench.error("gpubench.namespace", gpubench.namespace, "must not be empty")
    bench.finish()

    clusters_raw = top.get("clusters", list, [])
    clusters: list[ClusterSettings] = []
    for index, entry in enumerate(clusters_raw):
        clusters.append(_cluster(entry, f"clusters[{index}]", source, origin, base, profiles))
    names = [c.name for c in clusters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"clusters: name {duplicates[0]!r} is used twice (in {source})")
    attestation = _attestation(top.get("attestation", dict, {}), source, origin, base)
    lineage = _lineage(top.get("lineage", dict, {}), source, origin, base)
    serve = _serve(top.get("serve", dict, {}), source, origin, base)
    models = _models(top.get("models", dict, {}), source, origin, base)
    compute = _compute(top.get("compute", dict, {}), source, origin, base)
    export = _export(top.get("export", dict, {}), source, origin, base)
    reports = _reports(top.get("reports", dict, {}), source, origin, base)
    retention = _retention(top.get("retention", dict, {}), source, origin, base, telemetry)
    top.finish()

    return Settings(
        warehouse=warehouse,
        kubernetes=kubernetes,
        telemetry=telemetry,
        gpubench=gpubench,
        clusters=tuple(clusters),
        attestation=attestation,
        lineage=lineage,
        serve=serve,
        models=models,
        compute=compute,
        export=export,
        reports=reports,
        retention=retention,
        topology_profiles=profiles,
        source=source,
    )


def _topology_profile(custom: _Reader, name: str) -> tuple[tuple[str, ...], ...]:
    key = f"topology.profiles.{name}"
    entry = _Reader(custom.get(name, dict, {}), key, custom.source, custom.origin, custom.base)
    levels_raw = entry.get("levels", list, None)
    entry.finish()
    if not levels_raw:
        raise custom.error(f"{key}.levels", levels_raw, "must list at least one node label")
    levels: list[tuple[str, ...]] = []
    for level in levels_raw:
        labels = (level,) if isinstance(level, str) else level
        if not isinstance(labels, list | tuple) or not all(
            isinstance(label, str) and label for label in labels
        ):
            raise custom.error(
                f"{key}.levels",
                levels_raw,
                "must be a list of label keys (or of lists of alternative label keys)",
            )
        levels.append(tuple(labels))
    if HOSTNAME_LABEL not in levels[-1]:
        levels.append((HOSTNAME_LABEL,))
    seen: set[str] = set()
    for level in levels:
        for label in level:
            if label in seen:
                raise custom.error(f"{key}.levels", levels_raw, f"uses label {label!r} twice")
            seen.add(label)
    return tuple(levels)


def _cluster(
    entry: Any,
    prefix: str,
    source: str,
    origin: Mapping[str, str],
    base: Path | None,
    profiles: Mapping[str, Any],
) -> ClusterSettings:
    reader = _Reader(entry, prefix, source, origin, base)
    name = reader.get("name", str, None)
    if not name:
        raise reader.error(f"{prefix}.name", name, "is required: a short name for the cluster")
    if not all(ch.isalnum() or ch in "-_." for ch in name):
        raise reader.error(
            f"{prefix}.name", name, "may contain only letters, digits, '-', '_' and '.'"
        )
    kubeconfig = reader.path("kubeconfig", None)
    context = reader.get("context", str, None)
    in_cluster = reader.get("in_cluster", bool, False)
    profile = reader.get("topology_profile", str, None)
    prometheus_url = reader.get("prometheus_url", str, None)
    token_env = reader.get("prometheus_token_env", str, None)
    username = reader.get("prometheus_username", str, None)
    password_env = reader.get("prometheus_password_env", str, None)
    exporters = reader.strings("dcgm_exporter_urls", ())
    reader.finish()
    urls = [("prometheus_url", prometheus_url)] if prometheus_url is not None else []
    urls += [("dcgm_exporter_urls", url) for url in exporters]
    for key, url in urls:
        if not url.startswith(("http://", "https://")):
            raise reader.error(f"{prefix}.{key}", url, "must be an http:// or https:// URL")
        if "@" in url.split("//", 1)[1].split("/", 1)[0]:
            raise reader.error(
                f"{prefix}.{key}",
                "<redacted>",
                "must not carry credentials; name an environment variable in "
                "prometheus_token_env or prometheus_password_env",
            )
    for key, env in (
        ("prometheus_token_env", token_env),
        ("prometheus_password_env", password_env),
    ):
        if env is not None and not env.replace("_", "").isalnum():
            raise reader.error(f"{prefix}.{key}", env, "must be an environment variable name")
    if token_env is not None and (username is not None or password_env is not None):
        raise reader.error(
            f"{prefix}.prometheus_username",
            username,
            "cannot be combined with prometheus_token_env: Prometheus takes either a bearer "
            "token or basic auth; remove one of them",
        )
    if (username is None) != (password_env is None):
        missing = "prometheus_password_env" if password_env is None else "prometheus_username"
        raise reader.error(
            f"{prefix}.{missing}",
            None,
            "is required with "
            + ("prometheus_username" if password_env is None else "prometheus_password_env")
            + " (basic auth needs a user name and the environment variable holding the password)",
        )
    if username is not None and (not username or ":" in username):
        raise reader.error(
            f"{prefix}.prometheus_username", username, "must be non-empty and contain no ':'"
        )
    if in_cluster and (kubeconfig is not None or context is not None):
        raise reader.error(
            f"{prefix}.in_cluster", in_cluster, "cannot be combined with kubeconfig or context"
        )
    if profile is not None and profile not in profiles:
        raise reader.error(
            f"{prefix}.topology_profile",
            profile,
            "is not a known topology profile; known: " + ", ".join(sorted(profiles)),
        )
    if kubeconfig is not None and base is not None and not kubeconfig.is_absolute():
        kubeconfig = base.parent / kubeconfig
    return ClusterSettings(
        name=name,
        kubeconfig=kubeconfig,
        context=context,
        in_cluster=in_cluster,
        topology_profile=profile,
        prometheus_url=prometheus_url.rstrip("/") if prometheus_url else None,
        prometheus_token_env=token_env,
        prometheus_username=username,
        prometheus_password_env=password_env,
        dcgm_exporter_urls=exporters,
    )


# ---------------------------------------------------------------------------------------------
# Attestation, lineage and serve
#
# Paths: files that configure trust (jwks_file, roots_file, TLS certificate and key) are read
# relative to the configuration file's folder, like a cluster's kubeconfig, so a config folder
# can ship with its trust anchors; folders annex writes or watches (spool_dir, watch_dirs,
# jwks_cache_dir) are relative to the working directory, like warehouse.path.


def _env_name(reader: _Reader, name: str, default: str | None) -> str | None:
    value = reader.get(name, str, default)
    if value is not None and not (
        value and value.replace("_", "").isalnum() and not value[0].isdigit()
    ):
        raise reader.error(reader.key(name), value, "must be an environment variable name")
    return value


def _config_file(reader: _Reader, name: str) -> Path | None:
    value = reader.path(name, None)
    if value is not None and reader.base is not None and not value.is_absolute():
        value = reader.base.parent / value
    return value


def _http_url(reader: _Reader, name: str) -> str | None:
    url = reader.get(name, str, None)
    if url is None:
        return None
    if not url.startswith(("http://", "https://")) or len(url.split("//", 1)[1]) == 0:
        raise reader.error(reader.key(name), url, "must be an http:// or https:// URL")
    if "@" in url.split("//", 1)[1].split("/", 1)[0]:
        raise reader.error(reader.key(name), "<redacted>", "must not carry credentials")
    return url


def _attestation(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> AttestationSettings:
    reader = _Reader(table, "attestation", source, origin, base)
    issuers_raw = reader.get("issuers", list, [])
    issuers = tuple(
        _attestation_issuer(entry, f"attestation.issuers[{index}]", source, origin, base)
        for index, entry in enumerate(issuers_raw)
    )
    for attr, label in (("name", "name"), ("issuer", "issuer (iss)")):
        values = [getattr(i, attr) for i in issuers]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ConfigError(
                f"attestation.issuers: {label} {repeated[0]!r} is used twice (in {source})",
                hint="each trusted issuer appears once; a token is matched to it by its iss",
            )
    policy = _attestation_policy(reader.get("policy", dict, {}), source, origin, base)
    watch = reader.get("watch_dirs", list, None)
    if watch is not None and not all(isinstance(item, str) and item.strip() for item in watch):
        raise reader.error("attestation.watch_dirs", watch, "must be a list of non-empty paths")
    settings = AttestationSettings(
        issuers=issuers,
        policy=policy,
        leeway_seconds=reader.number("leeway_seconds", int, 60, minimum=0, maximum=3600),
        nonce_ttl_seconds=reader.number("nonce_ttl_seconds", int, 600, minimum=10, maximum=86_400),
        nonce_key_env=_env_name(reader, "nonce_key_env", "ANNEX_ATTESTATION_NONCE_KEY") or "",
        spool_dir=reader.path("spool_dir", AttestationSettings.spool_dir)
        or AttestationSettings.spool_dir,
        watch_dirs=tuple(Path(item).expanduser() for item in watch or ()),
        max_submission_bytes=reader.number(
            "max_submission_bytes", int, 1 << 20, minimum=1024, maximum=1 << 30
        ),
        max_token_bytes=reader.number(
            "max_token_bytes", int, 64 << 10, minimum=256, maximum=1 << 24
        ),
        max_submods=reader.number("max_submods", int, 16, minimum=1, maximum=1024),
        max_x5c_certs=reader.number("max_x5c_certs", int, 4, minimum=1, maximum=16),
        jwks_cache_dir=reader.path("jwks_cache_dir", AttestationSettings.jwks_cache_dir)
        or AttestationSettings.jwks_cache_dir,
        jwks_cache_seconds=reader.number(
            "jwks_cache_seconds", int, 3600, minimum=0, maximum=30 * 86_400
        ),
    )
    reader.finish()
    return settings


def _attestation_issuer(
    entry: Any, prefix: str, source: str, origin: Mapping[str, str], base: Path | None
) -> AttestationIssuer:
    reader = _Reader(entry, prefix, source, origin, base)
    name = reader.get("name", str, None)
    if not name:
        raise reader.error(f"{prefix}.name", name, "is required: a short name such as 'nras'")
    if not all(ch.isalnum() or ch in "-_." for ch in name):
        raise reader.error(
            f"{prefix}.name", name, "may contain only letters, digits, '-', '_' and '.'"
        )
    provider = reader.get("provider", str, None)
    if provider not in ATTESTATION_PROVIDERS:
        raise reader.error(
            f"{prefix}.provider", provider, "must be one of " + ", ".join(ATTESTATION_PROVIDERS)
        )
    allowed = ATTESTATION_PROVIDERS[provider]
    algorithm = reader.get("algorithm", str, allowed[0])
    if algorithm not in allowed:
        raise reader.error(
            f"{prefix}.algorithm",
            algorithm,
            f"is not allowed for {provider}; allowed: " + ", ".join(allowed),
        )
    issuer = reader.get("issuer", str, None)
    if not issuer or issuer != issuer.strip():
        raise reader.error(
            f"{prefix}.issuer", issuer, "is required: the exact iss claim of its tokens"
        )
    jwks_file = _config_file(reader, "jwks_file")
    jwks_url = _http_url(reader, "jwks_url")
    roots_file = _config_file(reader, "roots_file")
    max_age = reader.number("max_age_seconds", int, 3600, minimum=1, maximum=30 * 86_400)
    secret_env = _env_name(reader, "secret_env", None)
    reader.finish()
    if provider == "nvidia-local":
        if jwks_file is not None or jwks_url is not None or roots_file is not None:
            raise reader.error(
                f"{prefix}.provider",
                provider,
                "signs with a shared HS256 secret: it takes no jwks_file, jwks_url or roots_file "
                "(its tokens are stored as self-reported, never trusted)",
            )
    else:
        if (jwks_file is None) == (jwks_url is None):
            raise reader.error(
                f"{prefix}.jwks_file",
                str(jwks_file) if jwks_file else None,
                "or jwks_url: exactly one is required (the pinned key set of this issuer)",
            )
        if secret_env is not None:
            raise reader.error(
                f"{prefix}.secret_env", secret_env, "is only for provider 'nvidia-local'"
            )
    return AttestationIssuer(
        name=name,
        provider=provider,
        issuer=issuer,
        algorithm=algorithm,
        jwks_file=jwks_file,
        jwks_url=jwks_url,
        roots_file=roots_file,
        max_age_seconds=max_age,
        secret_env=secret_env,
    )


def _attestation_policy(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> AttestationPolicy:
    reader = _Reader(table, "attestation.policy", source, origin, base)
    defaults = AttestationPolicy()
    policy_id = reader.get("policy_id", str, defaults.policy_id)
    if not policy_id.strip():
        raise reader.error("attestation.policy.policy_id", policy_id, "must not be empty")
    policy = AttestationPolicy(
        policy_id=policy_id,
        require_secure_boot=reader.get("require_secure_boot", bool, True),
        allow_debug=reader.get("allow_debug", bool, False),
        gpu_driver_versions=reader.strings("gpu_driver_versions", ()),
        gpu_vbios_versions=reader.strings("gpu_vbios_versions", ()),
        nvidia_claims_versions=reader.strings(
            "nvidia_claims_versions", defaults.nvidia_claims_versions
        ),
        cvm_compliance_status=reader.strings(
            "cvm_compliance_status", defaults.cvm_compliance_status
        ),
        sevsnp_launch_measurements=reader.strings("sevsnp_launch_measurements", ()),
        sevsnp_host_data=reader.strings("sevsnp_host_data", ()),
        tdx_mrtd=reader.strings("tdx_mrtd", ()),
        ita_tcb_status=reader.strings("ita_tcb_status", defaults.ita_tcb_status),
    )
    reader.finish()
    return policy


def _lineage(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> LineageSettings:
    reader = _Reader(table, "lineage", source, origin, base)
    watch = reader.get("watch_dirs", list, None)
    if watch is not None and not all(isinstance(item, str) and item.strip() for item in watch):
        raise reader.error("lineage.watch_dirs", watch, "must be a list of non-empty paths")
    settings = LineageSettings(
        spool_dir=reader.path("spool_dir", LineageSettings.spool_dir) or LineageSettings.spool_dir,
        watch_dirs=tuple(Path(item).expanduser() for item in watch or ()),
        max_body_bytes=reader.number("max_body_bytes", int, 5 << 20, minimum=1024, maximum=1 << 30),
        max_events=reader.number("max_events", int, 1000, minimum=1, maximum=100_000),
        intake_workers=reader.number("intake_workers", int, 2, minimum=0, maximum=64),
    )
    reader.finish()
    return settings


def _serve(table: Any, source: str, origin: Mapping[str, str], base: Path | None) -> ServeSettings:
    reader = _Reader(table, "serve", source, origin, base)
    host = reader.get("host", str, "127.0.0.1")
    if not host.strip():
        raise reader.error("serve.host", host, "must not be empty (127.0.0.1, 0.0.0.0, ::)")
    settings = ServeSettings(
        host=host,
        port=reader.number("port", int, 8443, minimum=0, maximum=65_535),
        tls_cert_file=_config_file(reader, "tls_cert_file"),
        tls_key_file=_config_file(reader, "tls_key_file"),
        token_env=_env_name(reader, "token_env", "ANNEX_INTAKE_TOKEN") or "",
        max_body_bytes=reader.number("max_body_bytes", int, 5 << 20, minimum=1024, maximum=1 << 30),
        max_connections=reader.number("max_connections", int, 512, minimum=1, maximum=10_000),
        max_pending_connections=reader.number(
            "max_pending_connections", int, 256, minimum=1, maximum=10_000
        ),
        max_pending_per_client=reader.number(
            "max_pending_per_client", int, 32, minimum=1, maximum=10_000
        ),
        head_timeout_seconds=reader.number(
            "head_timeout_seconds", float, 10.0, minimum=0.1, maximum=300.0
        ),
        max_header_bytes=reader.number(
            "max_header_bytes", int, 32 << 10, minimum=1024, maximum=1 << 20
        ),
        max_header_fields=reader.number("max_header_fields", int, 100, minimum=8, maximum=1000),
        body_timeout_seconds=reader.number(
            "body_timeout_seconds", float, 300.0, minimum=1.0, maximum=3600.0
        ),
    )
    reader.finish()
    if (settings.tls_cert_file is None) != (settings.tls_key_file is None):
        key = "serve.tls_key_file" if settings.tls_key_file is None else "serve.tls_cert_file"
        raise reader.error(key, None, "is required: TLS needs both tls_cert_file and tls_key_file")
    return settings


def _models(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> ModelRegistrySettings:
    reader = _Reader(table, "models", source, origin, base)
    # a folder, so relative to the working directory like lineage.watch_dirs
    folder = reader.path("dir", ModelRegistrySettings.dir) or ModelRegistrySettings.dir
    reader.finish()
    return ModelRegistrySettings(dir=folder)


def _export(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> ExportSettings:
    reader = _Reader(table, "export", source, origin, base)
    # a folder, so relative to the working directory like models.dir
    folder = reader.path("dir", None)
    reader.finish()
    return ExportSettings(dir=folder)


def _reports(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> ReportsSettings:
    reader = _Reader(table, "reports", source, origin, base)
    # key and certificate ship with the configuration: relative to its file, like trust anchors
    settings = ReportsSettings(
        signing_key=_config_file(reader, "signing_key"),
        signing_certificate=_config_file(reader, "signing_certificate"),
        signing_passphrase_env=_env_name(reader, "signing_passphrase_env", None),
        timestamp_url=_http_url(reader, "timestamp_url"),
        retention_years=reader.number("retention_years", int, 10, minimum=1, maximum=100),
    )
    reader.finish()
    if (settings.signing_key is None) != (settings.signing_certificate is None):
        missing = "signing_key" if settings.signing_key is None else "signing_certificate"
        raise reader.error(
            f"reports.{missing}", None, "is required: signing needs a key and its certificate"
        )
    if settings.signing_key is None and (settings.timestamp_url or settings.signing_passphrase_env):
        key = "timestamp_url" if settings.timestamp_url else "signing_passphrase_env"
        raise reader.error(f"reports.{key}", "<set>", "needs signing_key and signing_certificate")
    return settings


def _compute(
    table: Any, source: str, origin: Mapping[str, str], base: Path | None
) -> ComputeSettings:
    reader = _Reader(table, "compute", source, origin, base)
    settings = ComputeSettings(
        pue=reader.number("pue", float, 1.2, minimum=1.0, maximum=3.0),
        server_overhead=reader.number("server_overhead", float, 1.82, minimum=1.0, maximum=5.0),
        power_fraction=reader.number("power_fraction", float, 1.0, minimum=0.05, maximum=1.5),
        default_mfu=reader.number("default_mfu", float, 0.35, minimum=0.01, maximum=1.0),
        disagreement_margin=reader.number(
            "disagreement_margin", float, 0.30, minimum=0.01, maximum=10.0
        ),
        as_of=_utc_moment(reader, "as_of"),
    )
    reader.finish()
    return settings


MAX_RETENTION_DAYS = 36_500
"""A hundred years: a larger value is a typo (leave raw rows uncompacted with this)."""
MIN_AUDIT_RETENTION_DAYS = 8
"""``marts.kubernetes_api_latency`` reads the last 7 days of ``audit.kubernetes_requests``."""


def _retention(
    table: Any,
    source: str,
    origin: Mapping[str, str],
    base: Path | None,
    telemetry: TelemetrySettings,
) -> RetentionSettings:
    reader = _Reader(table, "retention", source, origin, base)
    defaults = RetentionSettings()

    def days(name: str, minimum: int) -> int:
        return reader.number(
            name, int, getattr(defaults, name), minimum=minimum, maximum=MAX_RETENTION_DAYS
        )

    settings = RetentionSettings(
        telemetry_days=days("telemetry_days", 1),
        kubernetes_days=days("kubernetes_days", 1),
        lineage_days=days("lineage_days", 1),
        attestation_days=days("attestation_days", 1),
        audit_days=days("audit_days", MIN_AUDIT_RETENTION_DAYS),
        # a folder, so relative to the working directory like export.dir
        dir=reader.path("dir", None),
    )
    reader.finish()
    if settings.telemetry_days * 86_400 <= telemetry.window_seconds:
        # a collection would read samples again that compaction already moved: loaded twice
        raise reader.error(
            "retention.telemetry_days",
            settings.telemetry_days,
            f"must keep more than telemetry.window_seconds ({telemetry.window_seconds} s) "
            "of samples, or a collection reloads samples already compacted",
        )
    return settings
