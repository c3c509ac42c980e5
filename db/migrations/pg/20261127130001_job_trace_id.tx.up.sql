-- A job keeps the trace of the request that admitted it (32 hex digits; '' when tracing
-- was off), so an operator can go from a job to its trace.
ALTER TABLE jobs ADD COLUMN trace_id text NOT NULL DEFAULT '';
