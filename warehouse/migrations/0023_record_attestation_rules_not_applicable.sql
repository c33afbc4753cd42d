-- 0023 attestation rules a token's platform cannot carry (issue 35): a rule whose claim the
-- platform does not have (secure boot on an Azure TDX VM, MRTD on SGX, SEV-SNP measurements on
-- TDX) is neither passed nor failed; the record names it, so an analyst can tell "checked and
-- passed" from "not applicable" without reading the detail text.

ALTER TABLE core.attestation_records ADD COLUMN rules_not_applicable VARCHAR[];

COMMENT ON COLUMN core.attestation_records.rules_not_applicable IS 'Policy rules not applicable to this token''s platform (e.g. secure_boot on an Azure TDX CVM token, which carries no secure-boot claim; mrtd on an SGX token): neither passed nor failed, also said in detail. Empty when every rule applied; NULL for records loaded before migration 0023.';
