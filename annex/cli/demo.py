"""The demo's pushed evidence: attestations from simulated issuers and agents, lineage events
from a simulated OpenLineage producer, both through annex's intake.

``annex demo`` runs every evidence source against the simulator. For attestations that means
what a real deployment has: issuers whose key sets annex pins (served over HTTP and fetched
from the configured URL), the intake (``annex serve``'s server, over TLS with a bearer token)
that the nodes' agents push to with annex-issued nonces, and a shared folder of earlier
submissions written by a DaemonSet (the simulator's history). The collection itself is the
Dagster ``attestation_job``, as in production. For lineage it means the training pipelines'
OpenLineage producer (openlineage-python's HTTP transport) posting every training run's events
to the intake, out of order and with duplicates, then the Dagster ``lineage_job``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from annex.settings import Settings, load_settings

HISTORY_DAYS = 1
"""Days of earlier submissions the demo's shared folder holds."""
HISTORY_NODES = 40
"""Nodes whose earlier submissions it holds (those with planned faults first): enough to show
every verdict without making the demo wait on minting and verifying a big world's history."""
NONCE_KEY_ENV = "ANNEX_ATTESTATION_NONCE_KEY"
INTAKE_TOKEN_ENV = "ANNEX_INTAKE_TOKEN"


@dataclass(frozen=True)
class DemoAttestations:
    """What the demo's agents delivered, for its closing summary."""

    settings: Settings
    intake_url: str
    pushed: int
    accepted: int
    history_files: int


@dataclass(frozen=True)
class DemoLineage:
    """What the demo's producer delivered, for its closing summary."""

    settings: Settings
    intake_url: str
    events: int
    requests: int


SIMULATED_MODELS = Path(__file__).resolve().parents[2] / "simulator" / "models"
"""The metadata files of the simulated world's models (the demo's ``[models] dir``)."""

LINEAGE_BATCH = 100
"""Events per request the demo's producer sends (a JSON array to /api/v1/lineage/batch)."""


@contextlib.contextmanager
def simulated_lineage(
    settings: Settings, world: object, out: Path, *, cluster: str
) -> Iterator[DemoLineage]:
    """Run annex's intake with the lineage routes on loopback and let the simulated training
    pipelines of ``world`` deliver their OpenLineage events to it (their Kubernetes facets
    name ``cluster``). Yields ``settings`` changed to read that spool and the simulated
    models' metadata files. A rerun delivers the
    same events again: annex stores each once (its event id is the content's hash)."""
    from annex.settings import ServeSettings
    from services.intake import IntakeServer
    from services.lineage import lineage_routes
    from simulator.lineage.producer import build_events, deliver

    os.environ.setdefault(INTAKE_TOKEN_ENV, secrets.token_urlsafe(32))
    folder = (out / "lineage").absolute()
    demo = replace(
        settings,
        lineage=replace(settings.lineage, spool_dir=folder / "spool", watch_dirs=()),
        serve=ServeSettings(host="127.0.0.1", port=0, token_env=INTAKE_TOKEN_ENV),
        models=replace(settings.models, dir=SIMULATED_MODELS),
    )
    events = build_events(world, cluster=cluster)  # type: ignore[arg-type]

    def world_now() -> datetime:
        return world.now  # type: ignore[attr-defined,no-any-return]

    with IntakeServer(demo, lineage_routes(demo), clock=world_now) as intake:
        delivery = deliver(
            events,
            intake.url,
            token=os.environ[INTAKE_TOKEN_ENV],
            batch_size=LINEAGE_BATCH,
            shuffle_seed=int(getattr(world, "seed", 0)),
        )
        yield DemoLineage(demo, intake.url, len(delivery.order), delivery.requests)


@contextlib.contextmanager
def simulated_attestations(
    settings: Settings, world: object, out: Path, *, seed: int, first_run: bool
) -> Iterator[DemoAttestations]:
    """Serve the simulated issuers' key sets, run annex's intake, let every confidential node
    of ``world`` push one submission to it, and (on the ``first_run`` of a warehouse) write
    ``HISTORY_DAYS`` of earlier submissions of ``HISTORY_NODES`` nodes to a shared folder.
    Yields ``settings`` changed to trust those issuers and read that spool; the issuers' key
    server stays up meanwhile, so the collection fetches the pinned key sets from their
    configured URL.

    Secrets the intake and the collection share (the nonce key, the intake token, the local
    verifier's secret) are set in this process's environment, by name only in the settings.
    """
    from services.attestation import attestation_routes
    from services.intake import IntakeServer
    from simulator.attestation import tokens
    from simulator.attestation.agent import AttestingAgent, write_history
    from simulator.attestation.issuers import LOCAL_SECRET, LOCAL_SECRET_ENV, IssuerSet
    from simulator.attestation.server import AttestationIssuerServer
    from simulator.kubernetes.cluster import TLS_CERTIFICATE, TLS_KEY

    folder = (out / "attestation").absolute()
    trust = folder / "trust"
    history = folder / "shared"
    os.environ.setdefault(NONCE_KEY_ENV, secrets.token_hex(32))
    os.environ.setdefault(INTAKE_TOKEN_ENV, secrets.token_urlsafe(32))
    os.environ.setdefault(LOCAL_SECRET_ENV, LOCAL_SECRET.decode())
    issuers = IssuerSet.create(seed)
    issuers.write_trust(trust)
    with AttestationIssuerServer(issuers) as key_server:
        config = folder / "annex-attestation.toml"
        config.write_text(
            "[serve]\n"
            "port = 0\n"
            f'tls_cert_file = "{TLS_CERTIFICATE}"\n'
            f'tls_key_file = "{TLS_KEY}"\n'
            f'token_env = "{INTAKE_TOKEN_ENV}"\n\n'
            "[attestation]\n"
            f'spool_dir = "{folder / "spool"}"\n'
            f'watch_dirs = ["{history}"]\n'
            f'jwks_cache_dir = "{folder / "jwks-cache"}"\n'
            f'nonce_key_env = "{NONCE_KEY_ENV}"\n\n'
            + issuers.settings_toml(trust, jwks_base_url=key_server.url)
            + tokens.policy_toml(),
            encoding="utf-8",
        )
        loaded = load_settings(config, env={})
        demo = replace(settings, attestation=loaded.attestation, serve=loaded.serve)
        history_files = 0
        if first_run:
            history_files = write_history(
                world,  # type: ignore[arg-type]
                issuers,
                history,
                days=HISTORY_DAYS,
                max_nodes=HISTORY_NODES,
            )

        def world_now() -> datetime:
            return world.now  # type: ignore[attr-defined,no-any-return]

        client_tls = ssl.create_default_context(cafile=TLS_CERTIFICATE)
        with IntakeServer(demo, attestation_routes(demo), clock=world_now) as intake:
            agent = AttestingAgent(
                world,  # type: ignore[arg-type]
                issuers,
                intake.url,
                os.environ[INTAKE_TOKEN_ENV],
                verify_tls=client_tls,
                clock=world_now,
            )
            statuses = agent.run_once()
            yield DemoAttestations(
                settings=demo,
                intake_url=intake.url,
                pushed=len(statuses),
                accepted=sum(1 for status in statuses if status == 202),
                history_files=history_files,
            )
