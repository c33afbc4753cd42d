-- Run by warehouse/models/attestation_coverage.py (_DELETE_WINDOWS).
DELETE FROM marts.attestation_node_windows
WHERE cluster = $cluster AND day >= CAST($lo AS DATE) AND day < CAST($hi AS DATE)
