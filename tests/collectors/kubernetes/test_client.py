"""Building the ApiClient: identification, gzip, and errors that say what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from annex.errors import ConfigError
from annex.settings import KubernetesSettings
from collectors.kubernetes import api_client_for

TOKEN = "s3cr3t-token-value"


def kubeconfig(path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": TOKEN}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


def test_client_identifies_itself_asks_for_gzip_and_leaves_retries_to_annex(tmp_path):
    api = api_client_for(
        kubeconfig=kubeconfig(tmp_path / "kc"), context=None, in_cluster=False,
        settings=KubernetesSettings(),
    )  # fmt: skip
    assert api.user_agent.startswith("annex/")
    assert api.default_headers["Accept-Encoding"] == "gzip"
    assert api.configuration.retries is False
    assert api.configuration.host == "http://127.0.0.1:1"


def test_missing_kubeconfig_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        api_client_for(
            kubeconfig=tmp_path / "nope", context=None, in_cluster=False,
            settings=KubernetesSettings(),
        )  # fmt: skip


def test_unknown_context_is_a_config_error_without_the_token(tmp_path):
    with pytest.raises(ConfigError) as caught:
        api_client_for(
            kubeconfig=kubeconfig(tmp_path / "kc"), context="other", in_cluster=False,
            settings=KubernetesSettings(),
        )  # fmt: skip
    assert "other" in str(caught.value) and "--context" in caught.value.hint
    assert TOKEN not in str(caught.value)


def test_in_cluster_outside_a_pod_is_a_config_error(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="in-cluster"):
        api_client_for(
            kubeconfig=None, context=None, in_cluster=True, settings=KubernetesSettings()
        )
