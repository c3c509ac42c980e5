-- PostgreSQL gains a function here; SQLite admits jobs in a transaction and needs none.
SELECT 1;
