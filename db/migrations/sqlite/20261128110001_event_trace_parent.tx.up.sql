-- An event keeps the traceparent of the span that committed it ('' when tracing was off):
-- its webhook deliveries, made later by another process, link to it.
ALTER TABLE events ADD COLUMN trace_parent text NOT NULL DEFAULT '';
