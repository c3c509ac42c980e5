package domain

import (
	"context"
	"encoding/json"
	"strings"
)

// EventBus carries events to live subscribers in every API process: the outbox events
// the relay publishes once they are committed, and the progress of running jobs
// (EventJobProgress). It is Redis pub/sub in production and in-process in the embedded
// default. Delivery is best effort: a subscriber that falls behind loses messages, and
// one that connects late sees only what is published after; the outbox (GET /v1/events,
// history) is the record.
type EventBus interface {
	// Publish sends e to the subscribers of each of TopicsOf(e).
	Publish(ctx context.Context, e *Event) error
	// Subscribe starts a subscription to topics. Authorization comes first: the caller
	// subscribes only to resources the principal may see.
	Subscribe(ctx context.Context, topics ...string) (Subscription, error)
}

// Subscription receives the events of its topics until Close, or until the context it
// was made with ends; then its channel is closed.
type Subscription interface {
	Events() <-chan *Event
	Close()
}

// Topics. A resource's topic is its id (ids carry their kind), so jobUpdated(id),
// fileUpdated(id) and batchUpdated(id) subscribe to that id; a project's events of one
// environment go to ProjectTopic.

// ProjectTopic is the topic of every event of a project in one environment.
func ProjectTopic(projectID string, env Environment) string {
	return projectID + ":" + string(env)
}

// TopicsOf returns the topics an event goes to: its subject, the file it concerns, the
// batch of a job event's job, and its project's.
func TopicsOf(e *Event) []string {
	topics := make([]string, 0, 4)
	add := func(t string) {
		for _, have := range topics {
			if have == t {
				return
			}
		}
		topics = append(topics, t)
	}
	if e.SubjectID != "" {
		add(e.SubjectID)
	}
	if e.FileID != "" {
		add(e.FileID)
	}
	if strings.HasPrefix(e.Type, "job.") {
		var d struct {
			Object struct {
				BatchID *string `json:"batch_id"`
			} `json:"object"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Object.BatchID != nil && *d.Object.BatchID != "" {
			add(*d.Object.BatchID)
		}
	}
	if e.ProjectID != "" {
		add(ProjectTopic(e.ProjectID, e.Environment))
	}
	return topics
}
