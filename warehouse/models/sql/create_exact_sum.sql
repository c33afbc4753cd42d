-- exact_sum(x): the sum of DOUBLE evidence behind a figure, the same whatever the order of its
-- rows. DuckDB's parallel SUM(DOUBLE) adds in no fixed order, so two refreshes of the same
-- evidence could differ in the last bit; each value is rounded to 12 decimals (below the
-- evidence's own precision: GPU-hours, joules, GPUs x microseconds) and summed exactly as a
-- decimal. A value out of its range (10^26) or not finite is an error, not a figure (the
-- telemetry collectors skip NaN and infinities). A connection's temporary macro: run by
-- warehouse/models/compute.py and warehouse/models/utilisation.py before their sums.
CREATE OR REPLACE TEMP MACRO exact_sum(x) AS CAST(sum(CAST(x AS DECIMAL(38, 12))) AS DOUBLE)
