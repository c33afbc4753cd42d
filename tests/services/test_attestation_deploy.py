"""deploy/attestation-daemonset.yaml agrees with annex: the intake runs `annex serve` as the CLI
parses it, probes the server's health path, reads the variables the settings name; the agents
land on every confidential-capable node and never carry a secret in the manifest."""

from __future__ import annotations

from typing import Any

import yaml

from annex.cli import build_parser
from annex.settings import AttestationSettings, ServeSettings
from services.intake import HEALTH_PATH
from tests.helpers.paths import REPO_ROOT

MANIFEST = REPO_ROOT / "deploy" / "attestation-daemonset.yaml"


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    documents = [d for d in yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in documents}


def container(obj: dict[str, Any]) -> dict[str, Any]:
    [only] = obj["spec"]["template"]["spec"]["containers"]
    return only


def test_the_intake_runs_annex_serve_with_what_the_settings_name() -> None:
    intake = objects()[("Deployment", "annex-intake")]
    spec = container(intake)
    command = spec["command"]
    assert command[:2] == ["annex", "serve"]
    args = build_parser().parse_args(command[1:])
    assert args.command == "serve" and args.port == spec["ports"][0]["containerPort"]
    env = {e["name"]: e for e in spec["env"]}
    for name in (ServeSettings().token_env, AttestationSettings().nonce_key_env):
        assert "secretKeyRef" in env[name]["valueFrom"] and "value" not in env[name]
    for probe in ("readinessProbe", "livenessProbe"):
        assert spec[probe]["httpGet"]["path"] == HEALTH_PATH
        assert spec[probe]["httpGet"]["scheme"] == "HTTPS"
    pod = intake["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"annex.dev/warehouse": "true"}  # next to the warehouse
    assert intake["spec"]["replicas"] == 1 and pod["securityContext"]["runAsNonRoot"] is True
    service = objects()[("Service", "annex-intake")]
    assert service["spec"]["selector"] == intake["spec"]["selector"]["matchLabels"]


def test_agents_run_on_any_confidential_capable_node() -> None:
    agents = objects()[("DaemonSet", "annex-attestation-agent")]
    pod = agents["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    # one label per term: the terms are ORed, the expressions inside a term ANDed
    keys = [[e["key"] for e in term["matchExpressions"]] for term in terms]
    assert keys == [
        ["nvidia.com/cc.capable"],
        ["feature.node.kubernetes.io/cpu-security.sev.snp.enabled"],
        ["feature.node.kubernetes.io/cpu-security.tdx.enabled"],
    ]
    assert any(t["key"] == "nvidia.com/gpu" for t in pod["tolerations"])
    priority = objects()[("PriorityClass", pod["priorityClassName"])]
    assert priority["preemptionPolicy"] == "Never"
    assert pod["automountServiceAccountToken"] is False
    spec = container(agents)
    assert "nvidia.com/gpu" not in str(spec["resources"])  # takes no GPU from the scheduler
    env = {e["name"]: e for e in spec["env"]}
    assert "secretKeyRef" in env["ANNEX_INTAKE_TOKEN"]["valueFrom"]
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert int(env["ANNEX_ATTESTATION_INTERVAL_SECONDS"]["value"]) <= 3000
    assert env["ANNEX_INTAKE_URL"]["value"].startswith("https://annex-intake.annex.svc:")
