// Package jobs is the work side of filemill: the asynq task definitions, the queue
// the domain enqueues to, the worker server, the operation handlers, webhook delivery,
// the outbox relay and the periodic sweeps, and the event stream (domain.EventBus in
// process, or over Redis pub/sub, with the nudge that wakes relays after a commit).
//
// It speaks asynq and go-redis and imports domain; it never imports rest, graph, db or
// storage: the store, the blobs and the engines arrive through domain interfaces, wired
// in cmd. Delivery is at least once, so every handler must be safe to run twice.
package jobs
