-- The outbox relay, webhook delivery and the event stream.
--
-- A job event's subject is now the job; file_id names the file an event concerns (its
-- own events and its jobs'), which is what a file's history reads.
ALTER TABLE events ADD COLUMN file_id text COLLATE "C" NOT NULL DEFAULT '';
--bun:split
UPDATE events SET file_id = subject_id WHERE subject_id LIKE 'file\_%';
--bun:split
UPDATE events SET subject_id = data->'object'->>'id'
    WHERE type LIKE 'job.%' AND data->'object'->>'id' IS NOT NULL;
--bun:split
DROP INDEX ix_events_organization_id_subject_id_id;
--bun:split
CREATE INDEX ix_events_organization_id_file_id_id ON events (organization_id, file_id, id) WHERE file_id <> '';
--bun:split
-- GET /v1/events: one project and environment, newest first.
CREATE INDEX ix_events_list ON events (organization_id, project_id, environment, id DESC);
--bun:split

-- The outbox proper: the ids of events not relayed yet. Every insert into events adds
-- its rows here in the same statement, whatever wrote them; the relay claims rows with
-- FOR UPDATE SKIP LOCKED and deletes them in the transaction that records what it did.
-- Events themselves are never updated.
CREATE TABLE event_outbox (
    event_id text COLLATE "C" PRIMARY KEY
);
--bun:split
CREATE FUNCTION filemill_event_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_outbox (event_id) SELECT id FROM new_events;
  RETURN NULL;
END
$$;
--bun:split
CREATE TRIGGER tg_events_outbox AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION filemill_event_outbox();
--bun:split

ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text NOT NULL DEFAULT '',
    ADD COLUMN previous_secret_expires_at timestamptz, ADD COLUMN disabled_reason text NOT NULL DEFAULT '',
    ADD COLUMN disabled_at timestamptz, ADD COLUMN failing_since timestamptz;
--bun:split
-- The relay's lookup: the live endpoints of a project.
CREATE INDEX ix_webhook_endpoints_project_id_live ON webhook_endpoints (project_id) WHERE deleted_at IS NULL;
--bun:split

-- Nothing ever wrote deliveries: they are remade without foreign keys, since events are
-- swept after their retention and deliveries with them.
DROP TABLE deliveries;
--bun:split
CREATE TABLE deliveries (
    id               text COLLATE "C" PRIMARY KEY,
    endpoint_id      text COLLATE "C" NOT NULL,
    event_id         text COLLATE "C" NOT NULL,
    event_type       text        NOT NULL,
    status           text        NOT NULL,
    attempts         integer     NOT NULL,
    next_attempt_at  timestamptz,
    last_status_code integer     NOT NULL,
    last_error       text        NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    CONSTRAINT uq_deliveries_event_id_endpoint_id UNIQUE (event_id, endpoint_id)
);
--bun:split
CREATE INDEX ix_deliveries_endpoint_id_id ON deliveries (endpoint_id, id DESC);
--bun:split
-- The sweep of deliveries whose attempt is due and went missing.
CREATE INDEX ix_deliveries_pending_next_attempt_at ON deliveries (next_attempt_at) WHERE status = 'pending';
--bun:split
CREATE TABLE delivery_attempts (
    id               text COLLATE "C" PRIMARY KEY,
    delivery_id      text COLLATE "C" NOT NULL,
    attempt          integer     NOT NULL,
    status_code      integer     NOT NULL,
    duration_ms      integer     NOT NULL,
    response_snippet text        NOT NULL,
    error            text        NOT NULL,
    next_attempt_at  timestamptz,
    created_at       timestamptz NOT NULL
);
--bun:split
CREATE INDEX ix_delivery_attempts_delivery_id_id ON delivery_attempts (delivery_id, id);
