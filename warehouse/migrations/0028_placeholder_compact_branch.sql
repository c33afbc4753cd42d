-- TEMPORARY placeholder so that 0031 applies on this branch alone (no gaps allowed).
-- Drop this file when merging: migration 0028 belongs to another helper's branch.
SELECT 1;
