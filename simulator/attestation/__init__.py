"""Simulated confidential-computing attestation: issuers, tokens, agents, key servers.

    from simulator.attestation.issuers import IssuerSet
    from simulator.attestation import tokens
    issuers = IssuerSet.create(seed=0)
    result = tokens.nras_result(issuers, gpus=[(uuid, tokens.gpu_ueid(0, uuid))], ...)

`issuers` signs JWS tokens the way NVIDIA NRAS (ES384), Microsoft Azure Attestation (RS256),
Intel Trust Authority (PS384) and NVIDIA's local verifier (HS256) do, with simulated keys and
certificate chains; `tokens` builds their claim sets; `agent` is the node-side attester that
asks an intake for a nonce and pushes submissions (or writes past ones as files);
`server` publishes the issuers' key sets over HTTP. Everything it emits is marked simulated
(issuer URLs under `simulated.annex.invalid`, certificate names ending "(simulated)").
Never imports annex.
"""
