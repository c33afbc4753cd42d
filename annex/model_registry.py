"""The model registry: one human-authored YAML file per model, validated strictly.

What no cluster can know comes from here (Annex XI 1(c)-(f), MDF sections 1-3): the provider,
versions, parameter count, architecture, licence, modalities, release dates and base models; and
the join keys that tie training runs to the model: the lineage job names (a run's own job or
its parent campaign's job) and the Kubernetes namespaces its runs may use. Per model it also
holds the threshold-alert configuration and an optional training plan (the end date a
projection of running jobs runs to).

A file looks like::

    name: llama-70b                    # = annex_trainingRun.modelName of its runs
    provider: Example Labs
    contact: ai-office-contact@example.com   # template 1.1
    established_in_eu: false           # template 1.1: a provider outside the EU names
    authorised_representative: Example Labs EU B.V., Amsterdam, rep@example.eu  # (Art 54)
    sme: false                         # template 2.3: an SME lists the top 5 % or 1,000 domains
    code_of_practice_signatory: true   # signed the GPAI Code of Practice
    versions: [v1]
    parameters: 70000000000            # total; active_parameters for mixtures of experts
    architecture: dense decoder-only transformer
    licence: LicenseRef-example
    modalities: {input: [text], output: [text]}
    generative: true                   # the 10^23 indicative criterion needs a generative model
    release_date: 2026-10-01
    eu_market_date: 2026-10-15
    base_models: []                    # registry names; for a modification
    reported_compute_flop: 3.0e24      # only for models trained outside annex's clusters
    systemic_risk: false               # designated or notified as a GPAI model with systemic risk
    lineage: {jobs: [llama-70b.campaign], namespaces: [team-llm]}
    training: {dtype: bf16, plan: {end: 2027-06-01T00:00:00Z}}
    alerts: {enabled: true, thresholds: [gpai, systemic_risk, modification],
             disagreement_margin: 0.3}
    documentation:                     # Annex XI / XII and model documentation form answers
      intended_tasks: chat, summarisation, code completion
      acceptable_use_policy: https://example.com/aup
      distribution_channels: [API, weights download]
      context_length: 131072           # maximum input tokens

``documentation`` holds the human-authored answers of the technical documentation (the keys of
``DOCUMENTATION_FIELDS``, each optional): the report shows a missing one as a gap naming the
article or annex point that requires it.

Every error names the file, the field path and what to do; nothing is half-loaded: a folder
with one bad file is an error (a compliance figure must not silently lose a model).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import yaml

from annex.errors import ConfigError

THRESHOLD_NAMES = ("gpai", "systemic_risk", "modification")
"""gpai: 10^23 FLOP (indicative GPAI criterion); systemic_risk: 10^25 FLOP (Art 51(2));
modification: one third of the base model's compute (Guidelines points 60-61)."""

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
"""Training data types annex has dense peaks for (core.gpu_peak_reference.dtype)."""

TOP_FIELDS = (
    "name", "provider", "contact", "established_in_eu", "authorised_representative", "sme",
    "code_of_practice_signatory", "versions", "parameters",
    "active_parameters", "architecture",
    "licence", "modalities", "generative", "release_date", "eu_market_date", "base_models",
    "reported_compute_flop", "systemic_risk", "lineage", "training", "alerts", "documentation",
)  # fmt: skip

DOCUMENTATION_FIELDS = {
    "intended_tasks": "Annex XI 1(a), XII 1(a): the tasks the model is intended to perform",
    "integrable_systems": "Annex XI 1(a), XII 1(a): type and nature of AI systems it can be "
    "integrated into",
    "acceptable_use_policy": "Annex XI 1(b), XII 1(b): the acceptable use policy (a link or text)",
    "distribution_channels": "Annex XI 1(c), XII 1(c): how it is distributed (a list)",
    "input_formats": "Annex XI 1(e), XII 1(g): input formats (e.g. UTF-8 text, PNG)",
    "output_formats": "Annex XI 1(e), XII 1(g): output formats",
    "context_length": "Annex XII 2(b), MDF 2: maximum input size in tokens (an integer)",
    "max_output_tokens": "MDF 2: maximum output size in tokens (an integer)",
    "external_interaction": "Annex XII 1(d): how it interacts with hardware or software that is "
    "not part of the model",
    "software_versions": "Annex XII 1(e): versions of relevant software (a list)",
    "integration": "Annex XI 2(a), XII 2(a): technical means for integration (instructions, "
    "infrastructure, tools)",
    "inference_hardware": "MDF 4: hardware and software required to run it",
    "design_specification": "Annex XI 2(b), MDF 2: design specifications of the model",
    "training_methods": "Annex XI 2(b), MDF 5: training methods and techniques, key design "
    "choices and their rationale",
    "optimisation_objective": "Annex XI 2(b): what the training optimises and why",
    "data_curation": "Annex XI 2(c), XII 2(c): how the data was obtained, selected and curated",
    "unsuitable_data_checks": "Annex XI 2(c): how unsuitable data sources were detected",
    "bias_detection": "Annex XI 2(c): how identifiable biases were detected",
    "authenticity": "MDF 1: evidence of authenticity of the released model (e.g. a hash of the "
    "weights)",
    "inference_compute": "MDF 8: benchmarked inference compute and its methodology",
    "evaluation": "Annex XI section 2 point 1: evaluation strategies, criteria, metrics, results "
    "and limitations (systemic-risk models)",
    "adversarial_testing": "Annex XI section 2 point 2: internal and external adversarial "
    "testing (red teaming)",
    "model_adaptations": "Annex XI section 2 point 2: model adaptations (alignment, fine-tuning)",
    "system_architecture": "Annex XI section 2 point 3: how the software components build on "
    "or feed into each other",
}
"""The optional ``documentation`` answers of a model file and what requires each (the
technical documentation report's gap list names the same points)."""
DOCUMENTATION_LISTS = ("distribution_channels", "software_versions")
DOCUMENTATION_COUNTS = ("context_length", "max_output_tokens")

MODALITIES = ("text", "code", "image", "audio", "video", "protein", "other")


@dataclass(frozen=True)
class TrainingPlan:
    """How far the running jobs are planned to go: the projection's horizon."""

    end: datetime
    """Planned end of training (UTC): running jobs are projected at their current rate to it."""


@dataclass(frozen=True)
class AlertConfig:
    enabled: bool = True
    thresholds: tuple[str, ...] = THRESHOLD_NAMES
    disagreement_margin: float | None = None
    """Overrides ``[compute] disagreement_margin`` for this model."""


@dataclass(frozen=True)
class ModelDocumentation:
    """The human-authored answers of the technical documentation (``DOCUMENTATION_FIELDS``):
    each None until the provider writes it, which the report shows as a gap."""

    intended_tasks: str | None = None
    integrable_systems: str | None = None
    acceptable_use_policy: str | None = None
    distribution_channels: tuple[str, ...] = ()
    input_formats: str | None = None
    output_formats: str | None = None
    context_length: int | None = None
    max_output_tokens: int | None = None
    external_interaction: str | None = None
    software_versions: tuple[str, ...] = ()
    integration: str | None = None
    inference_hardware: str | None = None
    design_specification: str | None = None
    training_methods: str | None = None
    optimisation_objective: str | None = None
    data_curation: str | None = None
    unsuitable_data_checks: str | None = None
    bias_detection: str | None = None
    authenticity: str | None = None
    inference_compute: str | None = None
    evaluation: str | None = None
    adversarial_testing: str | None = None
    model_adaptations: str | None = None
    system_architecture: str | None = None


@dataclass(frozen=True)
class ModelEntry:
    """One model's metadata file, validated."""

    name: str
    provider: str
    parameters: int
    architecture: str
    licence: str
    input_modalities: tuple[str, ...]
    output_modalities: tuple[str, ...]
    path: Path
    versions: tuple[str, ...] = ()
    active_parameters: int | None = None
    generative: bool = True
    release_date: date | None = None
    eu_market_date: date | None = None
    contact: str | None = None
    """How to reach the provider (template 1.1): an address, a form, a mailbox."""
    code_of_practice_signatory: bool | None = None
    """Whether the provider signed the GPAI Code of Practice (its copyright chapter)."""
    established_in_eu: bool | None = None
    """Whether the provider is established in the Union (template 1.1: a provider established
    outside it names its authorised representative, Art 54(1)); None: not stated."""
    authorised_representative: str | None = None
    """The authorised representative's name and contact (template 1.1, Art 54), for a provider
    established outside the Union."""
    sme: bool | None = None
    """Whether the provider is an SME (Commission Recommendation 2003/361/EC): template 2.3 then
    asks for the top 5 % or 1,000 crawled domains, whichever is lower, instead of the top 10 %;
    None: not stated (the general rule applies)."""
    base_models: tuple[str, ...] = ()
    reported_compute_flop: float | None = None
    systemic_risk: bool | None = None
    """The model is a GPAI model with systemic risk (designated, or notified under Art 52): a
    modification of it whose compute is unknown is measured against 10^25/3 FLOP, not 10^23/3
    (Guidelines points 60-61). None: not stated."""
    lineage_jobs: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    dtype: str = "bf16"
    plan: TrainingPlan | None = None
    alerts: AlertConfig = field(default_factory=AlertConfig)
    documentation: ModelDocumentation = field(default_factory=ModelDocumentation)

    @property
    def file_name(self) -> str:
        """The metadata file named relative to the registry folder ([models] dir), as documents
        show it: never the machine path of the folder (the registry reads the folder's own
        files, so this is the file's name)."""
        return self.path.name

    @property
    def compute_parameters(self) -> int:
        """N in 6·N·D: the active parameters of a mixture of experts, else all of them."""
        return self.active_parameters or self.parameters


@dataclass(frozen=True)
class ModelRegistry:
    models: tuple[ModelEntry, ...]
    directory: Path

    def get(self, name: str) -> ModelEntry:
        for model in self.models:
            if model.name == name:
                return model
        known = ", ".join(m.name for m in self.models) or "none"
        raise ConfigError(
            f"no model named {name!r} in the model registry {self.directory} (known: {known})",
            hint=f"add {self.directory}/{name}.yaml (see annex/model_registry.py for the fields)",
        )


def load_registry(directory: Path) -> ModelRegistry:
    """Every ``*.yaml``/``*.yml`` file of ``directory``, validated; an absent folder is an empty
    registry (no models described yet), a bad file a ``ConfigError``."""
    if not directory.exists():
        return ModelRegistry((), directory)
    if not directory.is_dir():
        raise ConfigError(
            f"model registry {directory} is not a folder",
            hint="set [models] dir to a folder of one YAML file per model",
        )
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))
    models = [parse_model_file(p) for p in files]
    return ModelRegistry(check_registry(models), directory)


def parse_model_file(path: Path) -> ModelEntry:
    """Read and validate one model file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read model file {path}: {exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"{path} is not valid YAML: {exc}", hint="fix the syntax at the line shown"
        ) from None
    except ValueError as exc:  # YAML reads 2026-13-01 as a date and fails to build it
        raise ConfigError(
            f"{path}: a date is not a real date ({exc})", hint="write dates as YYYY-MM-DD"
        ) from None
    return parse_model(raw, path)


def parse_model(raw: Any, path: Path) -> ModelEntry:
    """Validate one model's parsed YAML (``path`` only names it in errors)."""
    top = _Fields(raw, path, "")
    top.reject_unknown(TOP_FIELDS)  # a misspelt field first, not "licence is missing"
    lineage = _Fields(top.take("lineage", dict, {}), path, "lineage")
    training = _Fields(top.take("training", dict, {}), path, "training")
    plan_raw = training.take("plan", dict, None)
    plan = None
    if plan_raw is not None:
        plan_fields = _Fields(plan_raw, path, "training.plan")
        plan = TrainingPlan(end=plan_fields.moment("end", required=True))
        plan_fields.finish()
    alerts_fields = _Fields(top.take("alerts", dict, {}), path, "alerts")
    thresholds = alerts_fields.strings("thresholds", THRESHOLD_NAMES, allowed=THRESHOLD_NAMES)
    margin = alerts_fields.take("disagreement_margin", float, None)
    if margin is not None and not 0 < margin <= 10:
        raise alerts_fields.error("disagreement_margin", margin, "must be above 0 and at most 10")
    alerts = AlertConfig(
        enabled=alerts_fields.take("enabled", bool, True),
        thresholds=thresholds,
        disagreement_margin=margin,
    )
    alerts_fields.finish()
    documentation = _documentation(
        _Fields(top.take("documentation", dict, {}), path, "documentation")
    )
    modalities = _Fields(top.take("modalities", dict, None, required=True), path, "modalities")
    entry = ModelEntry(
        name=top.text("name"),
        provider=top.text("provider"),
        parameters=top.positive_int("parameters", required=True),
        architecture=top.text("architecture"),
        licence=top.text("licence"),
        input_modalities=modalities.strings("input", (), allowed=MODALITIES, required=True),
        output_modalities=modalities.strings("output", (), allowed=MODALITIES, required=True),
        path=path,
        versions=top.strings("versions", ()),
        active_parameters=top.positive_int("active_parameters"),
        generative=top.take("generative", bool, True),
        release_date=top.day("release_date"),
        eu_market_date=top.day("eu_market_date"),
        contact=top.optional_text("contact"),
        code_of_practice_signatory=top.take("code_of_practice_signatory", bool, None),
        established_in_eu=top.take("established_in_eu", bool, None),
        authorised_representative=top.optional_text("authorised_representative"),
        sme=top.take("sme", bool, None),
        base_models=top.strings("base_models", ()),
        reported_compute_flop=top.flop("reported_compute_flop"),
        systemic_risk=top.take("systemic_risk", bool, None),
        lineage_jobs=lineage.strings("jobs", ()),
        namespaces=lineage.strings("namespaces", ()),
        dtype=training.choice("dtype", "bf16", DTYPES),
        plan=plan,
        alerts=alerts,
        documentation=documentation,
    )
    modalities.finish()
    lineage.finish()
    training.finish()
    top.finish()
    if entry.active_parameters is not None and entry.active_parameters > entry.parameters:
        raise top.error("active_parameters", entry.active_parameters, "must not exceed parameters")
    if entry.established_in_eu and entry.authorised_representative is not None:
        raise top.error(
            "authorised_representative",
            entry.authorised_representative,
            "is for a provider established outside the EU (Art 54(1)), but established_in_eu "
            "is true: remove one of the two",
        )
    return entry


def _documentation(fields: _Fields) -> ModelDocumentation:
    """The ``documentation`` mapping: free text, lists of text and token counts, each optional;
    an unknown answer is an error naming the field (a misspelt answer must not become a gap)."""
    fields.reject_unknown(tuple(DOCUMENTATION_FIELDS))
    values: dict[str, Any] = {}
    for name in DOCUMENTATION_FIELDS:
        if name in DOCUMENTATION_LISTS:
            values[name] = fields.strings(name, ())
        elif name in DOCUMENTATION_COUNTS:
            values[name] = fields.positive_int(name)
        else:
            values[name] = fields.optional_text(name)
    fields.finish()
    return ModelDocumentation(**values)


def check_registry(models: Iterable[ModelEntry]) -> tuple[ModelEntry, ...]:
    """Cross-file rules: names unique, base models present and not the model itself."""
    models = tuple(models)
    seen: dict[str, Path] = {}
    for model in models:
        if model.name in seen:
            raise ConfigError(
                f"{model.path}: name {model.name!r} is already used by {seen[model.name]}",
                hint="each model has one file; merge the two or rename one",
            )
        seen[model.name] = model.path
    for model in models:
        for index, base in enumerate(model.base_models):
            if base == model.name or base not in seen:
                problem = "is the model itself" if base == model.name else "has no registry file"
                raise ConfigError(
                    f"{model.path}: base_models[{index}] = {base!r} {problem}",
                    hint=f"add a file for {base!r} (with reported_compute_flop if it was trained "
                    "elsewhere) or correct the name",
                )
    return models


def registry_rows(registry: ModelRegistry) -> list[dict[str, Any]]:
    """The registry as rows of ``core.model_registry`` (warehouse.models.compute)."""
    return [
        {
            "model_name": m.name,
            "provider": m.provider,
            "versions": list(m.versions),
            "parameters": m.parameters,
            "active_parameters": m.active_parameters,
            "architecture": m.architecture,
            "licence": m.licence,
            "input_modalities": list(m.input_modalities),
            "output_modalities": list(m.output_modalities),
            "generative": m.generative,
            "release_date": m.release_date,
            "eu_market_date": m.eu_market_date,
            "base_models": list(m.base_models),
            "reported_compute_flop": m.reported_compute_flop,
            "systemic_risk": m.systemic_risk,
            "lineage_jobs": list(m.lineage_jobs),
            "namespaces": list(m.namespaces),
            "training_dtype": m.dtype,
            "plan_end": m.plan.end.replace(tzinfo=None) if m.plan else None,
            "alerts_enabled": m.alerts.enabled,
            "alert_thresholds": list(m.alerts.thresholds),
            "disagreement_margin": m.alerts.disagreement_margin,
            "source_file": str(m.path),
        }
        for m in registry.models
    ]


class _Fields:
    """Reads one mapping of a model file; errors carry the file and the field path."""

    def __init__(self, table: Any, path: Path, prefix: str) -> None:
        self.path = path
        self.prefix = prefix
        if not isinstance(table, Mapping):
            where = prefix or "the file"
            raise ConfigError(
                f"{path}: {where} must be a mapping of fields, not {type(table).__name__}",
                hint="write `field: value` lines (see annex/model_registry.py)",
            )
        self.table = table
        self.seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, value: Any, problem: str) -> ConfigError:
        return ConfigError(
            f"{self.path}: {self.key(name)} = {value!r} {problem}",
            hint=f"correct {self.key(name)} in {self.path.name}",
        )

    def take(self, name: str, kind: type, default: Any, *, required: bool = False) -> Any:
        self.seen.add(name)
        if name not in self.table or self.table[name] is None:
            if required:
                raise ConfigError(
                    f"{self.path}: {self.key(name)} is missing",
                    hint=f"add {self.key(name)} to {self.path.name}",
                )
            return default
        value = self.table[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is int and isinstance(value, bool):
            raise self.error(name, value, "must be an integer")
        if not isinstance(value, kind):
            raise self.error(name, value, f"must be {_KIND_NAMES[kind]}")
        return value

    def text(self, name: str) -> str:
        value = self.take(name, str, None, required=True)
        if not value.strip():
            raise self.error(name, value, "must not be empty")
        return value.strip()

    def optional_text(self, name: str) -> str | None:
        value = self.take(name, str, None)
        if value is not None and not value.strip():
            raise self.error(name, value, "must not be empty (leave the field out instead)")
        return value.strip() if value is not None else None

    def positive_int(self, name: str, *, required: bool = False) -> int | None:
        value = self.take(name, int, None, required=required)
        if value is not None and value <= 0:
            raise self.error(name, value, "must be a positive integer")
        return value

    def flop(self, name: str) -> float | None:
        value = self.take(name, float, None)
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise self.error(name, value, "must be a positive number of FLOP, e.g. 3.1e24")
        return value

    def strings(
        self,
        name: str,
        default: tuple[str, ...],
        *,
        allowed: tuple[str, ...] | None = None,
        required: bool = False,
    ) -> tuple[str, ...]:
        value = self.take(name, list, None, required=required)
        if value is None:
            return default
        if not all(isinstance(item, str) and item.strip() for item in value):
            raise self.error(name, value, "must be a list of non-empty strings")
        if required and not value:
            raise self.error(name, value, "must list at least one entry")
        if allowed is not None:
            for index, item in enumerate(value):
                if item not in allowed:
                    raise ConfigError(
                        f"{self.path}: {self.key(name)}[{index}] = {item!r} is not one of "
                        + ", ".join(allowed),
                        hint=f"use one of the listed values in {self.path.name}",
                    )
        return tuple(item.strip() for item in value)

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.take(name, str, default)
        if value not in allowed:
            raise self.error(name, value, "must be one of " + ", ".join(allowed))
        return value

    def day(self, name: str) -> date | None:
        value = self.take(name, object, None)
        if value is None:
            return None
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
        if isinstance(value, str):
            try:
                return date.fromisoformat(value)
            except ValueError:
                pass
        raise self.error(name, value, "must be a date written YYYY-MM-DD")

    def moment(self, name: str, *, required: bool = False) -> datetime:
        value = self.take(name, object, None, required=required)
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, date):
            moment = datetime.combine(value, time())
        elif isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                raise self.error(
                    name, value, "must be a date or time, e.g. 2027-06-01T00:00:00Z"
                ) from None
        else:
            raise self.error(name, value, "must be a date or time, e.g. 2027-06-01T00:00:00Z")
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)

    def finish(self) -> None:
        self.reject_unknown(tuple(self.seen))

    def reject_unknown(self, allowed: tuple[str, ...]) -> None:
        unknown = sorted(str(k) for k in set(self.table) - set(allowed))
        if unknown:
            close = difflib.get_close_matches(unknown[0], allowed, n=1)
            guess = f"did you mean {close[0]}? " if close else ""
            raise ConfigError(
                f"{self.path}: unknown field {self.key(unknown[0])}",
                hint=f"{guess}fields allowed here: {', '.join(sorted(allowed))}",
            )


_KIND_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "a mapping",
    object: "a value",
}
