-- Run by warehouse/models/attestation_coverage.py (_DELETE_HOURS).
DELETE FROM marts.attestation_gpu_hours
WHERE cluster = $cluster AND day >= CAST($lo AS DATE) AND day < CAST($hi AS DATE)
