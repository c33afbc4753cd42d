"""Properties of the verifier over generated input: it never raises, and no token whose bytes
were altered (header, payload or signature, one character anywhere) ever passes."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.attestation.verify import REASON_CODES, Verification, Verifier
from simulator.attestation import tokens
from tests.helpers.attestation_trust import (
    Trust,
    body,
    ita_evidence,
    maa_evidence,
    make_trust,
    nras_evidence,
    submit,
)

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def trust(tmp_path_factory: pytest.TempPathFactory) -> Trust:
    return make_trust(tmp_path_factory.mktemp("trust"))


@pytest.fixture(scope="module")
def verifier(trust: Trust) -> Verifier:
    return trust.verifier()


@pytest.fixture(scope="module")
def genuine(trust: Trust) -> dict[str, dict]:
    """One valid evidence item per kind, minted once."""
    return {
        "nras": nras_evidence(trust, count=2, prefix="p"),
        "nras-v2": nras_evidence(trust, count=1, prefix="q", version="2.0"),
        "maa": maa_evidence(trust, vm_id="VM-PROP"),
        "maa-tdx": maa_evidence(trust, vm_id="VM-PROP-TDX", tee="tdxvm"),
        "ita": ita_evidence(trust),
    }


def check_well_formed(result: Verification) -> None:
    assert isinstance(result, Verification)
    assert (result.submission is None) == (result.rejection is not None)
    if result.rejection is not None:
        assert result.records == []
        assert result.rejection["reason_code"] in REASON_CODES
    for record in result.records:
        assert set(record["reasons"]) <= REASON_CODES
        assert (record["verdict"] == "pass") == (record["reasons"] == [])
        assert record["verdict"] in ("pass", "fail", "error", "unverifiable")


def test_genuine_items_pass(verifier: Verifier, genuine: dict[str, dict]) -> None:
    """The baseline the mutation properties depart from."""
    for name, evidence in genuine.items():
        result = verifier.verify(submit(body([evidence], node="prop-node")))
        assert {r["verdict"] for r in result.records} == {"pass"}, name


@SETTINGS
@given(raw=st.binary(max_size=4096))
def test_random_bytes_never_raise(verifier: Verifier, raw: bytes) -> None:
    check_well_formed(verifier.verify(submit(raw)))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@SETTINGS
@given(value=JSON)
def test_random_json_never_raises(verifier: Verifier, value: object) -> None:
    check_well_formed(verifier.verify(submit(orjson.dumps(value))))


PROVIDERS = st.sampled_from(["nvidia-nras", "nvidia-local", "azure-maa", "intel-ita", "x"])
TOKENISH = st.text(max_size=200) | st.from_regex(
    r"[A-Za-z0-9_\-]{0,40}(\.[A-Za-z0-9_\-=+/]{0,40}){0,5}"
)
EVIDENCE = st.fixed_dictionaries(
    {"provider": PROVIDERS},
    optional={
        "token": TOKENISH | JSON,
        "result": st.tuples(st.tuples(st.just("JWT"), TOKENISH), st.dictionaries(
            st.text(max_size=8), TOKENISH, max_size=3)) | JSON,
        "gpus": st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3) | JSON,
    },
)  # fmt: skip


@SETTINGS
@given(
    evidence=st.lists(EVIDENCE, min_size=0, max_size=3),
    node=st.text(max_size=12),
    nonce=st.text(max_size=70) | JSON,
)
def test_submission_shaped_garbage_never_raises_or_passes(
    verifier: Verifier, evidence: list, node: str, nonce: object
) -> None:
    raw = orjson.dumps(
        {"schema": "annex.attestation/v1", "node_name": node, "nonce": nonce, "evidence": evidence}
    )
    result = verifier.verify(submit(raw))
    check_well_formed(result)
    assert all(record["verdict"] != "pass" for record in result.records)


def _with_token(evidence: dict, where: str, token: str) -> dict:
    changed = orjson.loads(orjson.dumps(evidence))
    if where == "token":
        changed["token"] = token
    elif where == "overall":
        changed["result"][0][1] = token
    else:
        changed["result"][1][where] = token
    return changed


def _token_at(evidence: dict, where: str) -> str:
    if where == "token":
        return evidence["token"]
    if where == "overall":
        return evidence["result"][0][1]
    return evidence["result"][1][where]


TARGETS = [
    ("nras", "overall"),
    ("nras", "GPU-0"),
    ("nras", "GPU-1"),
    ("nras-v2", "GPU-0"),
    ("maa", "token"),
    ("maa-tdx", "token"),
    ("ita", "token"),
]
REPLACEMENT = st.sampled_from(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ é\x00"
)


@SETTINGS
@given(
    target=st.sampled_from(TARGETS),
    position=st.floats(min_value=0, max_value=1, exclude_max=True),
    replacement=REPLACEMENT,
    edit=st.sampled_from(["replace", "insert", "delete"]),
)
def test_an_altered_token_never_passes(
    verifier: Verifier,
    genuine: dict[str, dict],
    target: tuple[str, str],
    position: float,
    replacement: str,
    edit: str,
) -> None:
    kind, where = target
    evidence = genuine[kind]
    token = _token_at(evidence, where)
    index = int(position * len(token))
    if edit == "replace":
        if token[index] == replacement:
            replacement = "A" if replacement != "A" else "B"
        altered = token[:index] + replacement + token[index + 1 :]
    elif edit == "insert":
        altered = token[:index] + replacement + token[index:]
    else:
        altered = token[:index] + token[index + 1 :]
    assert altered != token
    result = verifier.verify(submit(body([_with_token(evidence, where, altered)], node="p")))
    check_well_formed(result)
    key = None if where in ("overall", "token") else where
    (record,) = [r for r in result.records if r["submod_key"] == key]
    assert record["verdict"] != "pass", (where, index, edit)
    if where == "overall":  # nothing under a failed overall token passes either
        assert all(r["verdict"] != "pass" for r in result.records)


@SETTINGS
@given(
    target=st.sampled_from(TARGETS),
    segment=st.sampled_from([0, 1, 2]),
    position=st.floats(min_value=0, max_value=1, exclude_max=True),
    bit=st.integers(min_value=0, max_value=7),
)
def test_a_flipped_bit_in_any_decoded_segment_never_passes(
    verifier: Verifier,
    genuine: dict[str, dict],
    target: tuple[str, str],
    segment: int,
    position: float,
    bit: int,
) -> None:
    """Re-encode after flipping one bit of the decoded header, payload or signature bytes, so the
    altered token is well-formed base64url: only the signature check can catch it."""
    import base64

    kind, where = target
    evidence = genuine[kind]
    parts = _token_at(evidence, where).split(".")
    raw = bytearray(base64.urlsafe_b64decode(parts[segment] + "=" * (-len(parts[segment]) % 4)))
    index = int(position * len(raw))
    raw[index] ^= 1 << bit
    parts[segment] = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    altered = ".".join(parts)
    result = verifier.verify(submit(body([_with_token(evidence, where, altered)], node="p")))
    check_well_formed(result)
    key = None if where in ("overall", "token") else where
    (record,) = [r for r in result.records if r["submod_key"] == key]
    assert record["verdict"] != "pass"


@SETTINGS
@given(claims=st.dictionaries(st.text(max_size=10), JSON, max_size=6))
def test_arbitrary_claims_signed_by_a_trusted_issuer_never_raise(
    verifier: Verifier, trust: Trust, claims: dict
) -> None:
    """Genuine signatures over arbitrary claim sets: the appraisal must cope with any shape."""
    token = trust.issuers.ita.sign(claims)
    result = verifier.verify(submit(body([tokens.cvm_evidence("intel-ita", token)], node="c")))
    check_well_formed(result)
    (record,) = result.records
    assert record["verdict"] != "pass"  # no exp/iat/nonce/iss: it cannot pass
