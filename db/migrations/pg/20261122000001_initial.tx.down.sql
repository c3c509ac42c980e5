DROP TABLE IF EXISTS batches;
--bun:split
DROP TABLE IF EXISTS jobs;
--bun:split
DROP TABLE IF EXISTS artifacts;
--bun:split
DROP TABLE IF EXISTS files;
--bun:split
DROP TABLE IF EXISTS uploads;
--bun:split
DROP TABLE IF EXISTS deliveries;
--bun:split
DROP TABLE IF EXISTS webhook_endpoints;
--bun:split
DROP TABLE IF EXISTS events;
--bun:split
DROP TABLE IF EXISTS idempotency_records;
--bun:split
DROP TABLE IF EXISTS ledger_entries;
--bun:split
DROP TABLE IF EXISTS credit_accounts;
--bun:split
DROP TABLE IF EXISTS api_keys;
--bun:split
DROP TABLE IF EXISTS projects;
--bun:split
DROP TABLE IF EXISTS organizations;
