// Package domain holds filemill's entities, identifiers, error codes, policies and
// use-case services, and the small interfaces (ports) they need from the outside:
// Store, Blobs, Queue, RateLimiter, Clock, and for events EventBus, DeliveryQueue and
// WebhookSender.
//
// Both front doors (rest and graph) call these services, so every rule lives here once.
// This package imports only the standard library and small pure libraries; it must never
// import bun, asynq, minio-go, net/http handlers or gqlgen, nor any other filemill package
// but its own domain/netguard (the outbound address guard, standard library only).
package domain
