"""Settings of the attestation collector and the intake server: [attestation], its issuers and
policy, and [serve] — validated with errors that name the key, paths resolved as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import (
    AttestationIssuer,
    AttestationPolicy,
    AttestationSettings,
    ServeSettings,
    load_settings,
)
from tests.helpers.paths import REPO_ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conf" / "annex.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


FULL = """
[attestation]
leeway_seconds = 30
nonce_ttl_seconds = 300
nonce_key_env = "MY_NONCE_KEY"
spool_dir = "spool"
watch_dirs = ["/mnt/att", "more"]
max_submission_bytes = 2048
max_token_bytes = 4096
max_submods = 8
max_x5c_certs = 3
jwks_cache_dir = "cache"
jwks_cache_seconds = 60

[attestation.policy]
policy_id = "strict-v2"
allow_debug = true
gpu_driver_versions = ["550.90.07"]
tdx_mrtd = ["AB" ]

[[attestation.issuers]]
name = "nras"
provider = "nvidia-nras"
issuer = "https://nras.attestation.nvidia.com"
algorithm = "ES384"
jwks_file = "trust/nras.jwks.json"
roots_file = "trust/nras.root.pem"

[[attestation.issuers]]
name = "maa"
provider = "azure-maa"
issuer = "https://sharedeus.eus.attest.azure.net"
jwks_url = "https://sharedeus.eus.attest.azure.net/certs"
roots_file = "/etc/annex/maa.pem"
max_age_seconds = 1800

[[attestation.issuers]]
name = "local"
provider = "nvidia-local"
issuer = "LOCAL_GPU_VERIFIER"
secret_env = "LOCAL_SECRET"

[serve]
host = "0.0.0.0"
port = 9443
tls_cert_file = "tls/cert.pem"
tls_key_file = "tls/key.pem"
token_env = "INTAKE_TOKEN"
max_body_bytes = 4096
"""


def test_defaults_without_sections(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, ""), env={})
    assert settings.attestation == AttestationSettings()
    assert settings.serve == ServeSettings()
    att = settings.attestation
    assert att.leeway_seconds == 60 and att.max_token_bytes == 65536
    assert att.nonce_key_env == "ANNEX_ATTESTATION_NONCE_KEY"
    assert att.policy.nvidia_claims_versions == ("2.0", "3.0")
    assert settings.serve.port == 8443 and settings.serve.tls_cert_file is None


def test_full_sections_and_path_resolution(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    settings = load_settings(path, env={})
    att = settings.attestation
    conf = path.parent
    assert att.leeway_seconds == 30 and att.nonce_ttl_seconds == 300
    assert att.nonce_key_env == "MY_NONCE_KEY"
    # folders annex writes or watches stay relative to the working directory (like warehouse.path)
    assert att.spool_dir == Path("spool")
    assert att.watch_dirs == (Path("/mnt/att"), Path("more"))
    assert att.jwks_cache_dir == Path("cache")
    assert (att.max_submods, att.max_x5c_certs, att.jwks_cache_seconds) == (8, 3, 60)
    assert att.policy.policy_id == "strict-v2"
    assert att.policy.allow_debug is True and att.policy.require_secure_boot is True
    assert att.policy.gpu_driver_versions == ("550.90.07",)
    assert att.policy.tdx_mrtd == ("AB",)
    nras, maa, local = att.issuers
    # trust files are relative to the configuration file's folder (like a kubeconfig)
    assert nras == AttestationIssuer(
        name="nras",
        provider="nvidia-nras",
        issuer="https://nras.attestation.nvidia.com",
        algorithm="ES384",
        jwks_file=conf / "trust/nras.jwks.json",
        roots_file=conf / "trust/nras.root.pem",
    )
    assert maa.algorithm == "RS256"  # the provider's only algorithm is the default
    assert maa.jwks_url == "https://sharedeus.eus.attest.azure.net/certs"
    assert maa.roots_file == Path("/etc/annex/maa.pem")
    assert maa.max_age_seconds == 1800
    assert local.algorithm == "HS256" and local.secret_env == "LOCAL_SECRET"
    assert att.issuer("maa") is maa
    serve = settings.serve
    assert serve.host == "0.0.0.0" and serve.port == 9443
    assert serve.tls_cert_file == conf / "tls/cert.pem"
    assert serve.tls_key_file == conf / "tls/key.pem"
    assert serve.token_env == "INTAKE_TOKEN" and serve.max_body_bytes == 4096


def test_unknown_issuer_name_lists_configured_ones(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, FULL), env={})
    with pytest.raises(ConfigError, match="configured: nras, maa, local"):
        settings.attestation.issuer("ita")


def test_example_file_sections() -> None:
    example = REPO_ROOT / "annex.example.toml"
    settings = load_settings(example, env={})
    assert settings.attestation.policy == AttestationPolicy()
    assert settings.attestation.issuers == ()
    assert settings.serve == ServeSettings()


def test_environment_overrides_attestation_and_serve(tmp_path: Path) -> None:
    env = {
        "ANNEX_ATTESTATION__LEEWAY_SECONDS": "5",
        "ANNEX_ATTESTATION__POLICY__ALLOW_DEBUG": "true",
        "ANNEX_SERVE__PORT": "0",
    }
    settings = load_settings(write(tmp_path, ""), env=env)
    assert settings.attestation.leeway_seconds == 5
    assert settings.attestation.policy.allow_debug is True
    assert settings.serve.port == 0
    with pytest.raises(ConfigError, match="ANNEX_SERVE__PORT"):
        load_settings(write(tmp_path, ""), env={"ANNEX_SERVE__PORT": "70000"})


def test_policy_sha256_is_stable_and_sensitive() -> None:
    default = AttestationPolicy()
    assert default.sha256() == AttestationPolicy().sha256()
    assert len(default.sha256()) == 64
    assert AttestationPolicy(tdx_mrtd=("ab",)).sha256() != default.sha256()
    assert AttestationPolicy(allow_debug=True).sha256() != default.sha256()
    # canonical: sorted keys, lists, no whitespace
    text = default.canonical_json()
    assert text.startswith('{"allow_debug":false,') and " " not in text


ISSUER = "[[attestation.issuers]]\nname = 'n'\nprovider = 'nvidia-nras'\nissuer = 'https://i'\n"


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[attestation]\nleeway_seconds = -1", "attestation.leeway_seconds", "between"),
        ("[attestation]\nmax_submods = 0", "attestation.max_submods", "between"),
        ("[attestation]\nnonce_key_env = 'A B'", "attestation.nonce_key_env", "variable name"),
        ("[attestation]\nspool_dir = ''", "attestation.spool_dir", "empty"),
        ("[attestation]\nwatch_dirs = ['']", "attestation.watch_dirs", "non-empty"),
        ("[attestation]\nmystery = 1", "attestation.mystery", "unknown setting"),
        ("[attestation.policy]\ntdx_mrtd = [1]", "attestation.policy.tdx_mrtd", "strings"),
        ("[attestation.policy]\nallow_debug = 'no'", "attestation.policy.allow_debug", "true"),
        ("[attestation.policy]\npolicy_id = ' '", "attestation.policy.policy_id", "empty"),
        ("[attestation.policy]\nextra = 1", "attestation.policy.extra", "unknown setting"),
        (
            "[[attestation.issuers]]\nprovider = 'nvidia-nras'",
            "attestation.issuers[0].name",
            "required",
        ),
        (
            "[[attestation.issuers]]\nname = 'n'\nprovider = 'nvidia-cloud'",
            "attestation.issuers[0].provider",
            "one of nvidia-nras, azure-maa, intel-ita, nvidia-local",
        ),
        (
            ISSUER + "algorithm = 'HS256'\njwks_file = 'k'",
            "attestation.issuers[0].algorithm",
            "allowed: ES384",
        ),
        (
            "[[attestation.issuers]]\nname='m'\nprovider='azure-maa'\nissuer='https://m'\n"
            "algorithm='none'\njwks_file='k'",
            "attestation.issuers[0].algorithm",
            "allowed: RS256",
        ),
        (ISSUER, "attestation.issuers[0].jwks_file", "exactly one"),
        (
            ISSUER + "jwks_file = 'k'\njwks_url = 'https://k'",
            "attestation.issuers[0].jwks_file",
            "exactly one",
        ),
        (ISSUER + "jwks_url = 'ftp://k'", "attestation.issuers[0].jwks_url", "http"),
        (
            ISSUER + "jwks_url = 'https://u:p@k/certs'",
            "attestation.issuers[0].jwks_url",
            "credentials",
        ),
        (
            ISSUER + "jwks_file = 'k'\nsecret_env = 'S'",
            "attestation.issuers[0].secret_env",
            "only for provider 'nvidia-local'",
        ),
        (
            "[[attestation.issuers]]\nname='l'\nprovider='nvidia-local'\nissuer='L'\njwks_file='k'",
            "attestation.issuers[0].provider",
            "takes no jwks_file",
        ),
        (
            "[[attestation.issuers]]\nname = 'n'\nprovider = 'nvidia-nras'\njwks_file = 'k'",
            "attestation.issuers[0].issuer",
            "exact iss",
        ),
        (ISSUER + "jwks_file = 'k'\nmax_age_seconds = 0", "max_age_seconds", "between"),
        (ISSUER + "jwks_file='k'\n" + ISSUER + "jwks_file='k'", "attestation.issuers", "twice"),
        (
            ISSUER + "jwks_file='k'\n" + ISSUER.replace("'n'", "'m'") + "jwks_file='k'",
            "attestation.issuers",
            "issuer (iss) 'https://i' is used twice",
        ),
        ("[serve]\nport = 70000", "serve.port", "between"),
        ("[serve]\nhost = ''", "serve.host", "empty"),
        ("[serve]\ntls_cert_file = 'c.pem'", "serve.tls_key_file", "both"),
        ("[serve]\ntls_key_file = 'k.pem'", "serve.tls_cert_file", "both"),
        ("[serve]\ntoken_env = '1X'", "serve.token_env", "variable name"),
        ("[serve]\nmax_body_bytes = 10", "serve.max_body_bytes", "between"),
        ("serve = 3", "serve", "table"),
    ],
)
def test_invalid_values_name_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert key in message
    assert problem in message
    assert str(path) in message


def test_write_settings_round_trips_attestation(tmp_path: Path) -> None:
    from pipelines.execution import write_settings  # imports Dagster: only here

    settings = load_settings(write(tmp_path, FULL), env={})
    path = write_settings(settings, [], tmp_path / "out" / "annex.toml")
    again = load_settings(path, env={})
    att = settings.attestation
    assert again.attestation.policy == att.policy
    assert again.attestation.issuers == att.issuers  # trust paths were already absolute
    assert again.attestation.spool_dir == att.spool_dir.absolute()
    assert again.attestation.watch_dirs == tuple(p.absolute() for p in att.watch_dirs)
    assert again.attestation.jwks_cache_dir == att.jwks_cache_dir.absolute()
    assert again.attestation.leeway_seconds == att.leeway_seconds
    assert again.serve == settings.serve
