package client

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// StreamedEvent is an event as the events subscription delivers it, as it happens.
type StreamedEvent struct {
	ID        string
	Type      string
	CreatedAt time.Time
	// Data is {"object": …}: the resource the event is about, as the API shows it.
	Data json.RawMessage
}

// JSON is the event as GET /v1/events/{id} shows it and a webhook delivery carries it
// in its body.
func (e StreamedEvent) JSON() []byte {
	raw, _ := json.Marshal(struct {
		ID        string          `json:"id"`
		Object    string          `json:"object"`
		Type      string          `json:"type"`
		CreatedAt time.Time       `json:"created_at"`
		Data      json.RawMessage `json:"data"`
	}{e.ID, "event", e.Type, e.CreatedAt.UTC(), e.Data})
	return raw
}

// EventStreamOptions choose the events SubscribeEvents follows.
type EventStreamOptions struct {
	// ProjectID is the project whose events come; default the key's.
	ProjectID string
	// Types are the event types that come (file.ready, job.succeeded, …); all when empty.
	Types []string
}

const eventsQuery = `subscription Events($projectId: ID, $types: [String!]) { events(projectId: $projectId, types: $types) { id type createdAt data } }`

// SubscribeEvents follows the events of a project as they happen (the GraphQL events
// subscription over a websocket) and calls fn with each, one at a time. It returns
// when ctx is done (ctx.Err()), when fn fails (its error), or when the socket breaks
// or the server ends the stream: events that happen while no subscription is open are
// not replayed (GET /v1/events lists them).
func (c *Client) SubscribeEvents(ctx context.Context, opts EventStreamOptions, fn func(StreamedEvent) error) error {
	vars := map[string]any{}
	if opts.ProjectID != "" {
		vars["projectId"] = opts.ProjectID
	}
	if len(opts.Types) > 0 {
		vars["types"] = opts.Types
	}
	err := c.subscribe(ctx, eventsQuery, vars, func(data json.RawMessage) (bool, error) {
		var p struct {
			Events *struct {
				ID        string          `json:"id"`
				Type      string          `json:"type"`
				CreatedAt time.Time       `json:"createdAt"`
				Data      json.RawMessage `json:"data"`
			} `json:"events"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return false, err
		}
		if p.Events == nil {
			return false, errors.New("subscription: no events in " + string(data))
		}
		return false, fn(StreamedEvent{ID: p.Events.ID, Type: p.Events.Type, CreatedAt: p.Events.CreatedAt, Data: p.Events.Data})
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
