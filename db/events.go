package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// CreateEvent appends e to the outbox. Nil data is stored as JSON null.
func (s *Store) CreateEvent(ctx context.Context, e *domain.Event) error {
	row := *e
	row.Data = jsonOrNull(row.Data)
	return insert(ctx, s.w(), "event", row.ID, &row)
}

// FindEventsBySubject returns an organization's events about one subject, oldest first.
func (s *Store) FindEventsBySubject(ctx context.Context, orgID, subjectID string) ([]*domain.Event, error) {
	return findAll[domain.Event](ctx, s.r(), "events of "+subjectID, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("organization_id = ?", orgID).Where("subject_id = ?", subjectID).Order("id")
	})
}

// FindEventsAfter returns up to limit events with an id greater than afterID, oldest
// first; afterID "" starts at the beginning.
func (s *Store) FindEventsAfter(ctx context.Context, afterID string, limit int) ([]*domain.Event, error) {
	return findAll[domain.Event](ctx, s.r(), "events after "+afterID, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id > ?", afterID).Order("id").Limit(orBatch(limit))
	})
}

// CreateWebhookEndpoint inserts e. Nil enabled events are stored as an empty list.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e *domain.WebhookEndpoint) error {
	row := *e
	row.EnabledEvents = orEmpty(row.EnabledEvents)
	return insert(ctx, s.w(), "webhook endpoint", row.ID, &row)
}

// FindWebhookEndpointByID returns the endpoint; domain.ErrNotFound when missing or deleted.
func (s *Store) FindWebhookEndpointByID(ctx context.Context, id string) (*domain.WebhookEndpoint, error) {
	return findOne[domain.WebhookEndpoint](ctx, s.r(), "webhook endpoint "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id).Where("deleted_at IS NULL")
	})
}

// FindWebhookEndpoints returns one page of the scope's endpoints that are not deleted,
// newest first, and whether more follow.
func (s *Store) FindWebhookEndpoints(ctx context.Context, f domain.WebhookEndpointFilter) ([]*domain.WebhookEndpoint, bool, error) {
	filter, err := scoped(f.Scope, f.Environment, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("deleted_at IS NULL")
	})
	if err != nil {
		return nil, false, err
	}
	return findPage[domain.WebhookEndpoint](ctx, s.r(), "webhook endpoints", f.Page, filter)
}

// DeleteWebhookEndpoint marks the endpoint deleted; domain.ErrNotFound when it is
// missing or already deleted.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, id string, at time.Time) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.WebhookEndpoint)(nil)).
		Set("deleted_at = ?", at).Where("id = ?", id).Where("deleted_at IS NULL").Exec(ctx))
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("webhook endpoint %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// jsonOrNull stores absent JSON as JSON null, for NOT NULL json columns.
// jsonObject is m, or an empty object for none: options are an object by contract.
func jsonObject(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return json.RawMessage("{}")
	}
	return m
}

func jsonOrNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}
