-- Pages counted at completion make a per-page price exact; each job names the queue of
-- the engine families it needs; a preset's artifacts name the step that made them.
-- Jobs admitted before queues were per engine ran inspect, the only engine there was.
ALTER TABLE files ADD COLUMN pages integer NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE jobs ADD COLUMN queue text NOT NULL DEFAULT '';
--bun:split
UPDATE jobs SET queue = 'engine:inspect';
--bun:split
ALTER TABLE artifacts ADD COLUMN step text NOT NULL DEFAULT '';
