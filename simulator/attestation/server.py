"""The issuers' key-publication endpoints, on one loopback port, so `jwks_url` config works.

::

    with AttestationIssuerServer(IssuerSet.create(0)) as keys:
        keys.jwks_url("nras")     # {url}/nras/.well-known/jwks.json

Endpoints (GET): ``/nras/.well-known/jwks.json`` (NRAS publishes its JWKS there),
``/maa/certs`` and ``/maa/.well-known/openid-configuration`` (an Azure Attestation tenant's
metadata, whose ``jwks_uri`` points back at ``/maa/certs``), ``/ita/certs`` (Intel Trust
Authority), ``/attacker/.well-known/jwks.json`` (the attacker's keys, for tests that must
never see them fetched). Admin, as on the telemetry server: ``/_simulator/faults`` (GET,
POST a ``simulator.kubernetes.faults.Fault`` or a list, DELETE) and ``/_simulator/requests``
(GET, DELETE), so tests can make the key endpoint fail, stall or truncate, and can assert
which URLs a verifier fetched. The HTTP plumbing (connection tracking, fault-aware replies) is
the telemetry server's.
"""

from __future__ import annotations

import http
import time
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import orjson

from simulator.attestation.issuers import IssuerSet
from simulator.http import BackgroundServer, hang_up, read_body
from simulator.kubernetes.faults import Fault, FaultSet, RequestFacts
from simulator.telemetry.server import ADMIN_PREFIX, RequestRecord, _HttpServer, _Reply

_JSON = "application/json; charset=utf-8"


class AttestationIssuerServer(BackgroundServer[RequestRecord]):
    """Serves each simulated issuer's key set (and MAA's OpenID metadata) over HTTP."""

    thread_name = "attestation-issuers"

    def __init__(
        self,
        issuers: IssuerSet,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        seed: int = 0,
        max_records: int = 10_000,
    ) -> None:
        self.issuers = issuers
        self.host = host
        self.faults = FaultSet(seed)
        self._init_background(max_records)
        self._documents = {
            issuer.jwks_path: issuer.jwks_bytes() for issuer in issuers.all() if issuer.jwks_path
        }
        # _HttpServer hands every request to `<its second argument>.handle(handler)`
        self._server = _HttpServer((host, port), self)  # type: ignore[arg-type]

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def jwks_url(self, name: str) -> str:
        """Where issuer `name`'s key set is served."""
        return self.url + self.issuers.by_name(name).jwks_path

    # -- handling -----------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        started, clock = time.time(), time.perf_counter()
        url = urlsplit(handler.path)
        path = url.path
        body = read_body(handler)
        reply = _Reply(handler)
        if path.startswith(ADMIN_PREFIX):
            self._admin(handler, reply, path[len(ADMIN_PREFIX) :], body)
            return
        record = RequestRecord(
            method=handler.command,
            path=path,
            query=parse_qs(url.query, keep_blank_values=True),
            status=0,
            started=started,
            duration_seconds=0.0,
            user_agent=handler.headers.get("User-Agent", ""),
            headers={k: v for k, v in handler.headers.items() if k.lower() != "authorization"},
        )

        def log(r: _Reply) -> None:
            record.status = r.status
            record.fault = r.fault.kind if r.fault else None
            record.duration_seconds = time.perf_counter() - clock
            self.record(record)

        reply.on_answer = log
        try:
            self._serve(handler, reply, path)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            handler.close_connection = True
        finally:
            if reply.on_answer is not None:
                reply.on_answer(reply)
            record.bytes_sent = reply.bytes_sent

    def _serve(self, handler: BaseHTTPRequestHandler, reply: _Reply, path: str) -> None:
        reply.fault = self.faults.match(RequestFacts(handler.command, path, None, False, False))
        fault = reply.fault
        if fault is not None and fault.kind == "disconnect":
            handler.close_connection = True
            hang_up(handler.connection)
            return
        if fault is not None and fault.kind == "status":
            error = {"error": http.HTTPStatus(fault.status).phrase, "simulated": True}
            reply.send(fault.status, orjson.dumps(error), _JSON)
            return
        if handler.command != "GET":
            reply.send(405, b'{"error": "method not allowed"}', _JSON)
            return
        document = self._documents.get(path)
        if document is not None:
            reply.send(200, document, _JSON)
        elif path == "/maa/.well-known/openid-configuration":
            reply.send(200, self._maa_metadata(), _JSON)
        else:
            reply.send(404, b'{"error": "not found"}', _JSON)

    def _maa_metadata(self) -> bytes:
        maa = self.issuers.maa
        return orjson.dumps(
            {
                "issuer": maa.iss,
                "jwks_uri": self.url + maa.jwks_path,
                "id_token_signing_alg_values_supported": [maa.alg],
                "response_types_supported": ["token", "none"],
                "revocation_endpoint": f"{maa.iss}/revocations",
                "claims_supported": [
                    "x-ms-ver",
                    "x-ms-attestation-type",
                    "x-ms-policy-hash",
                    "x-ms-isolation-tee",
                    "x-ms-runtime",
                    "x-ms-azurevm-vmid",
                    "secureboot",
                    "iss",
                    "exp",
                    "iat",
                    "nbf",
                    "jti",
                ],
            }
        )

    def _admin(
        self, handler: BaseHTTPRequestHandler, reply: _Reply, action: str, body: bytes
    ) -> None:
        method = handler.command
        try:
            if action == "faults":
                if method == "POST":
                    data = orjson.loads(body)
                    items = data if isinstance(data, list) else [data]
                    result: object = {
                        "added": [self.faults.add(Fault.from_dict(i)).to_dict() for i in items]
                    }
                elif method == "DELETE":
                    self.faults.clear()
                    result = {"cleared": True}
                else:
                    result = [f.to_dict() for f in self.faults.active()]
            elif action == "requests":
                if method == "DELETE":
                    self.clear_requests()
                    result = {"cleared": True}
                else:
                    result = [asdict(r) for r in self.requests()]
            else:
                reply.send(404, b'{"error": "not found"}', _JSON)
                return
        except (ValueError, TypeError, KeyError) as error:
            reply.send(400, orjson.dumps({"error": f"simulator admin: {error}"}), _JSON)
            return
        reply.send(200, orjson.dumps(result), _JSON)


__all__ = ["AttestationIssuerServer"]
