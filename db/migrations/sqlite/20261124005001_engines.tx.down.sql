ALTER TABLE artifacts DROP COLUMN step;
--bun:split
ALTER TABLE jobs DROP COLUMN queue;
--bun:split
ALTER TABLE files DROP COLUMN pages;
