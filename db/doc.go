// Package db is filemill's metadata store: the domain.Store implementation on bun, for
// PostgreSQL (production, many processes) and SQLite (the embedded default).
//
// It owns the schema and its migrations (hand-written SQL per dialect, embedded and
// applied with bun's migrate package), the queries behind every Store method, and
// transactions: data functions take bun.IDB, so one implementation serves inside and
// outside a transaction, and InTx hands the services a Store bound to one.
//
// State changes are conditional updates checked by rows affected (a job leaves "queued"
// once; a reserve never takes the balance below zero), so concurrent processes need no
// locks beyond the database's own.
//
// This package imports only domain, bun and the database drivers. It must never import
// rest, graph, jobs or storage; only cmd and tests import it.
package db
