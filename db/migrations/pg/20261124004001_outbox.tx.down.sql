DROP TABLE delivery_attempts;
--bun:split
DROP TABLE deliveries;
--bun:split
CREATE TABLE deliveries (
    id               text COLLATE "C" PRIMARY KEY,
    endpoint_id      text        NOT NULL REFERENCES webhook_endpoints (id),
    event_id         text        NOT NULL REFERENCES events (id),
    status           text        NOT NULL,
    attempts         integer     NOT NULL,
    next_attempt_at  timestamptz,
    last_status_code integer     NOT NULL,
    last_error       text        NOT NULL,
    created_at       timestamptz NOT NULL
);
--bun:split
CREATE INDEX ix_deliveries_endpoint_id_created_at ON deliveries (endpoint_id, created_at);
--bun:split
CREATE INDEX ix_deliveries_event_id ON deliveries (event_id);
--bun:split
DROP INDEX ix_webhook_endpoints_project_id_live;
--bun:split
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at,
    DROP COLUMN disabled_reason, DROP COLUMN disabled_at, DROP COLUMN failing_since;
--bun:split
DROP TRIGGER tg_events_outbox ON events;
--bun:split
DROP FUNCTION filemill_event_outbox();
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
