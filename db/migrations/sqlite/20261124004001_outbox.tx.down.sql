DROP TABLE delivery_attempts;
--bun:split
DROP TABLE deliveries;
--bun:split
CREATE TABLE deliveries (
    id               TEXT PRIMARY KEY,
    endpoint_id      TEXT        NOT NULL REFERENCES webhook_endpoints (id),
    event_id         TEXT        NOT NULL REFERENCES events (id),
    status           TEXT        NOT NULL,
    attempts         INTEGER     NOT NULL,
    next_attempt_at  TEXT,
    last_status_code INTEGER     NOT NULL,
    last_error       TEXT        NOT NULL,
    created_at       TEXT        NOT NULL
) STRICT;
--bun:split
CREATE INDEX ix_deliveries_endpoint_id_created_at ON deliveries (endpoint_id, created_at);
--bun:split
CREATE INDEX ix_deliveries_event_id ON deliveries (event_id);
--bun:split
DROP INDEX ix_webhook_endpoints_project_id_live;
--bun:split
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret;
--bun:split
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_expires_at;
--bun:split
ALTER TABLE webhook_endpoints DROP COLUMN disabled_reason;
--bun:split
ALTER TABLE webhook_endpoints DROP COLUMN disabled_at;
--bun:split
ALTER TABLE webhook_endpoints DROP COLUMN failing_since;
--bun:split
DROP TRIGGER tg_events_outbox;
--bun:split
DROP TABLE event_outbox;
--bun:split
DROP INDEX ix_events_list;
--bun:split
DROP INDEX ix_events_organization_id_file_id_id;
--bun:split
UPDATE events SET subject_id = file_id WHERE file_id <> '';
--bun:split
CREATE INDEX ix_events_organization_id_subject_id_id ON events (organization_id, subject_id, id);
--bun:split
ALTER TABLE events DROP COLUMN file_id;
