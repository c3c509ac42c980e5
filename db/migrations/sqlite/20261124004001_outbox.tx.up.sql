-- The outbox relay, webhook delivery and the event stream (see the PostgreSQL twin).
ALTER TABLE events ADD COLUMN file_id TEXT NOT NULL DEFAULT '';
--bun:split
UPDATE events SET file_id = subject_id WHERE subject_id LIKE 'file\_%' ESCAPE '\';
--bun:split
UPDATE events SET subject_id = json_extract(data, '$.object.id')
    WHERE type LIKE 'job.%' AND json_extract(data, '$.object.id') IS NOT NULL;
--bun:split
DROP INDEX ix_events_organization_id_subject_id_id;
--bun:split
CREATE INDEX ix_events_organization_id_file_id_id ON events (organization_id, file_id, id) WHERE file_id <> '';
--bun:split
CREATE INDEX ix_events_list ON events (organization_id, project_id, environment, id DESC);
--bun:split
CREATE TABLE event_outbox (
    event_id TEXT PRIMARY KEY
) STRICT;
--bun:split
CREATE TRIGGER tg_events_outbox AFTER INSERT ON events
BEGIN
    INSERT INTO event_outbox (event_id) VALUES (NEW.id);
END;
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at TEXT;
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN disabled_at TEXT;
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN failing_since TEXT;
--bun:split
CREATE INDEX ix_webhook_endpoints_project_id_live ON webhook_endpoints (project_id) WHERE deleted_at IS NULL;
--bun:split
DROP TABLE deliveries;
--bun:split
CREATE TABLE deliveries (
    id               TEXT PRIMARY KEY,
    endpoint_id      TEXT        NOT NULL,
    event_id         TEXT        NOT NULL,
    event_type       TEXT        NOT NULL,
    status           TEXT        NOT NULL,
    attempts         INTEGER     NOT NULL,
    next_attempt_at  TEXT,
    last_status_code INTEGER     NOT NULL,
    last_error       TEXT        NOT NULL,
    created_at       TEXT        NOT NULL,
    updated_at       TEXT        NOT NULL,
    CONSTRAINT uq_deliveries_event_id_endpoint_id UNIQUE (event_id, endpoint_id)
) STRICT;
--bun:split
CREATE INDEX ix_deliveries_endpoint_id_id ON deliveries (endpoint_id, id DESC);
--bun:split
CREATE INDEX ix_deliveries_pending_next_attempt_at ON deliveries (next_attempt_at) WHERE status = 'pending';
--bun:split
CREATE TABLE delivery_attempts (
    id               TEXT PRIMARY KEY,
    delivery_id      TEXT        NOT NULL,
    attempt          INTEGER     NOT NULL,
    status_code      INTEGER     NOT NULL,
    duration_ms      INTEGER     NOT NULL,
    response_snippet TEXT        NOT NULL,
    error            TEXT        NOT NULL,
    next_attempt_at  TEXT,
    created_at       TEXT        NOT NULL
) STRICT;
--bun:split
CREATE INDEX ix_delivery_attempts_delivery_id_id ON delivery_attempts (delivery_id, id);
