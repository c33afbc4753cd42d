"""The model registry: a valid folder loads, and every kind of mistake is an error that names
the file, the field and what to do."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.model_registry import load_registry, registry_rows

VALID = """\
name: llama-70b
provider: Example Labs
versions: [v1, v1.1]
parameters: 70000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {input: [text], output: [text]}
release_date: 2026-10-01
lineage: {jobs: [llama-70b.campaign], namespaces: [team-llm]}
training: {dtype: bf16, plan: {end: 2027-06-01T00:00:00Z}}
alerts: {thresholds: [systemic_risk], disagreement_margin: 0.25}
"""

FINE_TUNE = """\
name: llama-70b-chat
provider: Downstream Ltd
parameters: 70000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {input: [text], output: [text]}
base_models: [llama-70b]
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_folder_loads_with_every_field(tmp_path: Path) -> None:
    write(tmp_path, "llama-70b.yaml", VALID)
    write(tmp_path, "llama-70b-chat.yml", FINE_TUNE)
    write(tmp_path, "README.md", "not a model file")
    registry = load_registry(tmp_path)
    model = registry.get("llama-70b")
    assert model.parameters == 70_000_000_000 and model.compute_parameters == 70_000_000_000
    assert model.versions == ("v1", "v1.1")
    assert model.release_date == date(2026, 10, 1)
    assert model.contact is None and model.code_of_practice_signatory is None  # optional
    assert model.plan is not None and model.plan.end == datetime(2027, 6, 1, tzinfo=UTC)
    assert model.lineage_jobs == ("llama-70b.campaign",) and model.namespaces == ("team-llm",)
    assert model.alerts.thresholds == ("systemic_risk",)
    assert model.alerts.disagreement_margin == 0.25
    assert registry.get("llama-70b-chat").base_models == ("llama-70b",)
    rows = {r["model_name"]: r for r in registry_rows(registry)}
    assert rows["llama-70b"]["plan_end"] == datetime(2027, 6, 1)  # naive UTC for TIMESTAMP
    assert rows["llama-70b-chat"]["training_dtype"] == "bf16"


def test_an_absent_folder_is_an_empty_registry_and_unknown_names_say_what_to_do(
    tmp_path: Path,
) -> None:
    registry = load_registry(tmp_path / "none")
    assert registry.models == ()
    with pytest.raises(ConfigError, match="no model named 'x'") as raised:
        registry.get("x")
    assert "x.yaml" in str(raised.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # unknown key (a typo), at the top and nested
        (("licence:", "license:"), r"unknown field license"),
        (("dtype: bf16", "dtype: bf16, steps: 3"), r"unknown field training\.steps"),
        # wrong types
        (("parameters: 70000000000", "parameters: seventy billion"),
         r"parameters = 'seventy billion' must be an integer"),
        (("versions: [v1, v1.1]", "versions: v1"), r"versions = 'v1' must be a list"),
        (("parameters: 70000000000", "parameters: -5"), r"parameters = -5 must be a positive"),
        (("input: [text]", "input: [smell]"), r"modalities\.input\[0\] = 'smell' is not one of"),
        (("dtype: bf16", "dtype: int4"), r"training\.dtype = 'int4' must be one of"),
        (("[systemic_risk]", "[systemic]"), r"alerts\.thresholds\[0\] = 'systemic' is not one"),
        # missing required field
        (("provider: Example Labs\n", ""), r"provider is missing"),
        # bad dates
        (("release_date: 2026-10-01", "release_date: 2026-13-01"), r"not a real date"),
        (("release_date: 2026-10-01", "release_date: next spring"),
         r"release_date = 'next spring' must be a date"),
        (("end: 2027-06-01T00:00:00Z", "end: soon"), r"training\.plan\.end = 'soon' must be"),
        # the summary's 1.1 and 3.1
        (("provider: Example Labs\n", "provider: Example Labs\ncontact: ' '\n"),
         r"contact = ' ' must not be empty"),
        (("provider: Example Labs\n",
          "provider: Example Labs\ncode_of_practice_signatory: yes please\n"),
         r"code_of_practice_signatory = 'yes please' must be"),
        # the summary's 1.1 (authorised representative) and 2.3 (SME status)
        (("provider: Example Labs\n", "provider: Example Labs\nsme: maybe\n"),
         r"sme = 'maybe' must be true or false"),
        (("provider: Example Labs\n", "provider: Example Labs\nestablished_in_eu: 1\n"),
         r"established_in_eu = 1 must be true or false"),
        (("provider: Example Labs\n",
          "provider: Example Labs\nestablished_in_eu: true\nauthorised_representative: R\n"),
         r"authorised_representative = 'R' is for a provider established outside the EU"),
    ],
)  # fmt: skip
def test_each_error_names_the_file_and_field(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in VALID
    path = write(tmp_path, "llama-70b.yaml", VALID.replace(old, new, 1))
    with pytest.raises(ConfigError, match=message) as raised:
        load_registry(tmp_path)
    assert str(path) in raised.value.message
    assert raised.value.hint


def test_invalid_yaml_and_a_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "name: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_registry(tmp_path)
    write(tmp_path, "a.yaml", "- just\n- a list\n")
    with pytest.raises(ConfigError, match="the file must be a mapping"):
        load_registry(tmp_path)


def test_duplicate_model_names_across_files(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", VALID)
    write(tmp_path, "b.yaml", VALID)
    with pytest.raises(ConfigError, match="name 'llama-70b' is already used by") as raised:
        load_registry(tmp_path)
    assert "b.yaml" in raised.value.message and "a.yaml" in raised.value.message


def test_base_model_not_found_or_itself(tmp_path: Path) -> None:
    write(tmp_path, "chat.yaml", FINE_TUNE)
    with pytest.raises(ConfigError, match=r"base_models\[0\] = 'llama-70b' has no registry file"):
        load_registry(tmp_path)
    write(tmp_path, "chat.yaml", FINE_TUNE.replace("[llama-70b]", "[llama-70b-chat]"))
    with pytest.raises(ConfigError, match="is the model itself"):
        load_registry(tmp_path)


def test_active_parameters_cannot_exceed_the_total(tmp_path: Path) -> None:
    write(tmp_path, "m.yaml", VALID + "active_parameters: 80000000000\n")
    with pytest.raises(ConfigError, match="must not exceed parameters"):
        load_registry(tmp_path)
    write(tmp_path, "m.yaml", VALID + "active_parameters: 13000000000\n")
    assert load_registry(tmp_path).get("llama-70b").compute_parameters == 13_000_000_000


def test_provider_status_for_the_public_summary(tmp_path: Path) -> None:
    """Template 1.1 (authorised representative, Art 54) and 2.3 (an SME's top-domain rule):
    stated or not, never defaulted to an answer; the file is named relative to the folder."""
    write(tmp_path, "llama-70b.yaml", VALID)
    model = load_registry(tmp_path).get("llama-70b")
    assert (model.sme, model.established_in_eu, model.authorised_representative) == (
        None,
        None,
        None,
    )
    assert model.file_name == "llama-70b.yaml"
    assert str(tmp_path) not in model.file_name
    stated = VALID + "sme: true\nestablished_in_eu: false\nauthorised_representative: R, r@x.eu\n"
    write(tmp_path, "llama-70b.yaml", stated)
    model = load_registry(tmp_path).get("llama-70b")
    assert (model.sme, model.established_in_eu, model.authorised_representative) == (
        True,
        False,
        "R, r@x.eu",
    )
