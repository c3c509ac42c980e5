ALTER TABLE events DROP COLUMN trace_parent;
