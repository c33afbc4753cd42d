"""Settings: file + environment overrides, validated with errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import HOSTNAME_LABEL, TOPOLOGY_PRESETS, load_settings
from tests.helpers.paths import REPO_ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "annex.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings(env={})
    assert settings.warehouse.path == Path("annex.duckdb")
    assert settings.warehouse.resolved_published_path == Path("annex.published.duckdb")
    assert settings.kubernetes.page_size == 500
    assert settings.clusters == ()
    assert settings.source == "defaults"


def test_example_file_is_valid() -> None:
    example = REPO_ROOT / "annex.example.toml"
    settings = load_settings(example, env={})
    assert [c.name for c in settings.clusters] == ["prod-east"]
    levels = settings.topology_levels("datacenter-rack")
    assert levels[1] == ("example.com/rack", "example.com/rack-legacy")
    assert levels[-1] == (HOSTNAME_LABEL,)


def test_file_values_and_relative_kubeconfig(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[warehouse]
path = "w/annex.duckdb"
[kubernetes]
page_size = 1000
topology_profile = "gke"
[kubernetes.balloons]
priority_below = -10
priority_classes = ["spare"]
[[clusters]]
name = "a"
kubeconfig = "configs/a.yaml"
context = "ctx-a"
[[clusters]]
name = "b"
in_cluster = true
topology_profile = "eks"
""",
    )
    settings = load_settings(path, env={})
    assert settings.warehouse.path == Path("w/annex.duckdb")
    assert settings.kubernetes.page_size == 1000
    assert settings.kubernetes.balloons.priority_below == -10
    assert settings.kubernetes.balloons.priority_classes == ("spare",)
    a = settings.cluster("a")
    assert a.kubeconfig == tmp_path / "configs/a.yaml"
    assert a.context == "ctx-a"
    assert settings.cluster("b").in_cluster is True
    assert settings.topology_levels("eks") == TOPOLOGY_PRESETS["eks"]


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[kubernetes]\npage_size = 5", "kubernetes.page_size", "between"),
        ("[kubernetes]\npage_size = 'many'", "kubernetes.page_size", "integer"),
        ("[kubernetes]\npage_size = true", "kubernetes.page_size", "integer"),
        ("[kubernetes]\ntopology_profile = 'mars'", "kubernetes.topology_profile", "known"),
        ("[kubernetes]\npage_sise = 500", "kubernetes.page_sise", "unknown setting"),
        ("[kubernetes.balloons]\npriority_classes = [1]", "priority_classes", "strings"),
        ("[[clusters]]\nkubeconfig = 'x'", "clusters[0].name", "required"),
        ("[[clusters]]\nname = 'a b'", "clusters[0].name", "letters"),
        (
            "[[clusters]]\nname = 'a'\nin_cluster = true\ncontext = 'c'",
            "clusters[0].in_cluster",
            "cannot be combined",
        ),
        ("[[clusters]]\nname='a'\n[[clusters]]\nname='a'", "clusters", "twice"),
        ("[warehouse]\npath = ''", "warehouse.path", "empty"),
        ("[topology.profiles.x]\nlevels = []", "topology.profiles.x.levels", "at least one"),
        ("[topology.profiles.x]\nlevels = [3]", "topology.profiles.x.levels", "label keys"),
        ("warehouse = 3", "warehouse", "table"),
        ("[telemetry]\nmax_points_per_series = 20000", "max_points_per_series", "between"),
        ("[gpubench]\npeak_tolerance = 0.5", "gpubench.peak_tolerance", "between"),
        (
            "[[clusters]]\nname = 'a'\nprometheus_url = 'prom:9090'",
            "clusters[0].prometheus_url",
            "http",
        ),
        (
            "[[clusters]]\nname = 'a'\ndcgm_exporter_urls = ['http://u:pw@h:9400/metrics']",
            "clusters[0].dcgm_exporter_urls",
            "credentials",
        ),
        (
            "[[clusters]]\nname = 'a'\nprometheus_token_env = 'a b'",
            "clusters[0].prometheus_token_env",
            "variable name",
        ),
    ],
)
def test_invalid_values_name_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert key in message
    assert problem in message
    assert str(path) in message or key == "clusters"


def test_cluster_telemetry_sources(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[[clusters]]\nname = 'gpu-east'\nprometheus_url = 'https://prom:9090/'\n"
        "prometheus_token_env = 'PROM_TOKEN'\n"
        "dcgm_exporter_urls = ['http://{node}:9400/metrics']\n",
    )
    cluster = load_settings(path, env={}).cluster("gpu-east")
    assert cluster.prometheus_url == "https://prom:9090"
    assert cluster.prometheus_token_env == "PROM_TOKEN"
    assert cluster.dcgm_exporter_urls == ("http://{node}:9400/metrics",)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[warehouse\npath=")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(path, env={})


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml", env={})


def test_environment_overrides_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[kubernetes]\npage_size = 1000\n")
    env = {
        "ANNEX_WAREHOUSE": "/data/annex.duckdb",
        "ANNEX_KUBERNETES__PAGE_SIZE": "250",
        "ANNEX_KUBERNETES__BALLOONS__PRIORITY_CLASSES": '["a", "b"]',
        "ANNEX_KUBERNETES__TOPOLOGY_PROFILE": "oci",
    }
    settings = load_settings(path, env=env)
    assert settings.warehouse.path == Path("/data/annex.duckdb")
    assert settings.kubernetes.page_size == 250
    assert settings.kubernetes.balloons.priority_classes == ("a", "b")
    assert settings.kubernetes.topology_profile == "oci"


def test_environment_error_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, ""), env={"ANNEX_KUBERNETES__PAGE_SIZE": "3"})
    assert "ANNEX_KUBERNETES__PAGE_SIZE" in str(info.value)


def test_config_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "[kubernetes]\npage_size = 777\n")
    monkeypatch.chdir(tmp_path / "..")
    assert load_settings(env={"ANNEX_CONFIG": str(path)}).kubernetes.page_size == 777


def test_unknown_cluster_lists_known_ones(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "[[clusters]]\nname = 'a'\n"), env={})
    with pytest.raises(ConfigError, match="configured: a"):
        settings.cluster("b")


def test_custom_profile_appends_hostname_and_rejects_repeats(tmp_path: Path) -> None:
    settings = load_settings(
        write(tmp_path, "[topology.profiles.rack]\nlevels = ['zone', 'rack']\n"), env={}
    )
    assert settings.topology_levels("rack") == (("zone",), ("rack",), (HOSTNAME_LABEL,))
    with pytest.raises(ConfigError, match="twice"):
        load_settings(
            write(tmp_path, "[topology.profiles.rack]\nlevels = ['zone', 'zone']\n"), env={}
        )


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ('"4GB"', "4GB"),
        ('" 2GiB "', "2GiB"),
        ('"1.5gb"', "1.5gb"),
        ('"50%"', "50%"),
        ('"256MiB"', "256MiB"),  # the smallest: 268,435,456 bytes
        ('"270MB"', "270MB"),  # decimal units: 270,000,000 bytes
    ],
)
def test_warehouse_memory_limit_is_a_size_or_a_share(
    tmp_path: Path, written: str, kept: str
) -> None:
    path = write(tmp_path, f"[warehouse]\nmemory_limit = {written}\n")
    assert load_settings(path, env={}).warehouse.memory_limit == kept


def test_warehouse_memory_limit_defaults_to_duckdbs_own(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "[warehouse]\n"), env={}).warehouse.memory_limit is None


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ('"lots"', "must be a size"),
        ('"4 bananas"', "must be a size"),
        ('"100MB"', "at least 256MiB"),
        ('"260MB"', "at least 256MiB"),  # 260,000,000 bytes: below 256 MiB
        ('"255MiB"', "at least 256MiB"),
        ('"0%"', "between 1% and 100%"),
        ('"150%"', "between 1% and 100%"),
        ("4", "must be a string"),
    ],
)
def test_warehouse_memory_limit_that_duckdb_cannot_use_is_refused(
    tmp_path: Path, written: str, problem: str
) -> None:
    path = write(tmp_path, f"[warehouse]\nmemory_limit = {written}\n")
    with pytest.raises(ConfigError, match=r"warehouse\.memory_limit") as caught:
        load_settings(path, env={})
    assert problem in str(caught.value)


def test_retention_defaults_and_folder_beside_the_warehouse(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "[warehouse]\npath = 'w/annex.duckdb'\n"), env={})
    retention = settings.retention
    assert (retention.telemetry_days, retention.kubernetes_days, retention.audit_days) == (
        7,
        30,
        90,
    )
    assert retention.days("lineage") == 400 and retention.days("attestation") == 400
    assert retention.resolved_dir(settings.warehouse) == (Path("w") / "archive").absolute()


def test_retention_values_and_environment_override(tmp_path: Path) -> None:
    path = write(tmp_path, "[retention]\ntelemetry_days = 10\ndir = 'cold'\n")
    settings = load_settings(path, env={"ANNEX_RETENTION__AUDIT_DAYS": "30"})
    assert settings.retention.telemetry_days == 10
    assert settings.retention.audit_days == 30
    assert settings.retention.resolved_dir(settings.warehouse) == Path("cold").absolute()


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("telemetry_days = 0", "retention.telemetry_days", "between 1 and 36500"),
        ("kubernetes_days = 'long'", "retention.kubernetes_days", "must be an integer"),
        ("audit_days = 7", "retention.audit_days", "between 8 and 36500"),
        ("lineage_days = 100000", "retention.lineage_days", "between 1 and 36500"),
        ("dir = ' '", "retention.dir", "must not be empty"),
        ("weeks = 2", "retention.weeks", "unknown setting"),
    ],
)
def test_retention_refuses_bad_values(tmp_path: Path, text: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as caught:
        load_settings(write(tmp_path, f"[retention]\n{text}\n"), env={})
    assert problem in str(caught.value)


def test_retention_keeps_more_telemetry_than_a_collection_reads(tmp_path: Path) -> None:
    text = "[telemetry]\nwindow_seconds = 172800\n[retention]\ntelemetry_days = 2\n"
    with pytest.raises(ConfigError, match=r"retention\.telemetry_days") as caught:
        load_settings(write(tmp_path, text), env={})
    assert "telemetry.window_seconds" in str(caught.value)


def test_pool_labels_are_read_and_written_for_dagster(tmp_path: Path) -> None:
    from pipelines.execution import write_settings

    settings = load_settings(
        write(tmp_path, '[kubernetes]\npool_labels = ["acme.com/pool"]\n'), env={}
    )
    assert settings.kubernetes.pool_labels == ("acme.com/pool",)
    again = load_settings(write_settings(settings, (), tmp_path / "dagster.toml"), env={})
    assert again.kubernetes.pool_labels == ("acme.com/pool",)
    with pytest.raises(ConfigError, match="pool_labels"):
        load_settings(write(tmp_path, '[kubernetes]\npool_labels = [""]\n'), env={})
