"""The attestation source model: verified tokens from ``collectors/attestation``.

The collector's verifier judges each token on its own (signature, chain, issuer, times, nonce,
policy, replays within one run). The merge (``attestation_merge.sql``) adds what only the
warehouse can know, because it holds every collection's evidence: a token (or its ``jti``)
already presented by another node or boot (``replay``), a GPU whose signed ``ueid`` is bound
to another GPU UUID or node, or an Azure Attestation VM id that is not the node's system UUID
(``device_mismatch``). Those records are stored with verdict ``fail``, never dropped, and the
verifier's own verdict is kept beside (``collector_verdict``).

Tables: ``core.attestation_submissions``, ``core.attestation_records``,
``core.gpu_attested_devices`` (migration ``0006_attestation.sql`` documents every column).
Rejected submissions (not JSON, not the agent contract, too large) arrive as the engine's
``rejected`` table and land in ``audit.rejected``. Coverage is derived afterwards by
``warehouse.models.attestation_coverage.refresh_attestation_coverage``. Neither reads a stored
record's ``claims`` (the merge judges the staged tokens; replays go by hash and ``jti``):
past ``[retention] attestation_days`` compaction sets them to NULL (``warehouse.compaction``;
``archive.attestation_records`` reads them back), which must stay so.
"""

from __future__ import annotations

from pathlib import Path

from warehouse.load import SourceModel

_HERE = Path(__file__).parent

ATTESTATION_MODEL = SourceModel(
    source="attestation",
    staging_sql=(_HERE / "attestation_staging.sql").read_text(encoding="utf-8"),
    merge_sql=(_HERE / "attestation_merge.sql").read_text(encoding="utf-8"),
)
