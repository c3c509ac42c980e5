package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// outboxSignal calls the hook set with OnOutbox after each commit that wrote events.
type outboxSignal struct {
	hook atomic.Pointer[func()]
}

// OnOutbox sets fn to be called after every commit that wrote events, by this Store
// and the transactions it runs: the nudge that wakes the outbox relay at once instead
// of at its next poll. fn must not block.
func (s *Store) OnOutbox(fn func()) { s.outbox.hook.Store(&fn) }

// wroteEvents notes that events were written: at once outside a transaction, at the
// commit inside one.
func (s *Store) wroteEvents() {
	if s.txEvents != nil {
		s.txEvents.Store(true)
		return
	}
	s.signalOutbox()
}

func (s *Store) signalOutbox() {
	if fn := s.outbox.hook.Load(); fn != nil {
		(*fn)()
	}
}

// writesEvents reports whether an atomic write inserts events.
func (w *atomicWrite) writesEvents() bool {
	for _, rows := range w.inserts {
		if evs, ok := rows.(*[]*domain.Event); ok && len(*evs) > 0 {
			return true
		}
	}
	return false
}

var eventType = reflect.TypeFor[domain.Event]()

// CreateEvent appends e to the outbox. Nil data is stored as JSON null.
func (s *Store) CreateEvent(ctx context.Context, e *domain.Event) error {
	row := *e
	row.Data = jsonOrNull(row.Data)
	if err := insert(ctx, s.w(), "event", row.ID, &row); err != nil {
		return err
	}
	s.wroteEvents()
	return nil
}

// FindEventByID returns the event, or domain.ErrNotFound.
func (s *Store) FindEventByID(ctx context.Context, id string) (*domain.Event, error) {
	return findOne[domain.Event](ctx, s.r(), "event "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindEventsByFile returns an organization's events concerning one file, oldest first:
// the latest ones only when latest is above 0.
func (s *Store) FindEventsByFile(ctx context.Context, orgID, fileID string, latest int) ([]*domain.Event, error) {
	if fileID == "" {
		return []*domain.Event{}, nil
	}
	evs, err := findAll[domain.Event](ctx, s.r(), "events of "+fileID, func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("organization_id = ?", orgID).Where("file_id = ?", fileID).Where("file_id <> ''")
		if latest > 0 {
			return q.Order("id DESC").Limit(int64(latest))
		}
		return q.Order("id")
	})
	if err == nil && latest > 0 {
		slices.Reverse(evs)
	}
	return evs, err
}

// FindEvents returns one page of the scope's events of the given types created since
// f.Since, newest first, and whether more follow.
func (s *Store) FindEvents(ctx context.Context, f domain.EventFilter) ([]*domain.Event, bool, error) {
	if len(f.Types) == 0 {
		return nil, false, errors.New("find events: no types")
	}
	filter, err := scoped(f.Scope, f.Environment, func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("type IN (?)", bun.In(f.Types))
		if !f.Since.IsZero() {
			// By id, through the list index: ids begin with their creation time.
			q = q.Where("id >= ?", domain.IDAt(domain.PrefixEvent, f.Since))
		}
		return q
	})
	if err != nil {
		return nil, false, err
	}
	return findPage[domain.Event](ctx, s.r(), "events", f.Page, filter)
}

// ClaimOutbox returns up to limit events not relayed yet, smallest id first, locked
// until the transaction ends. On PostgreSQL the outbox rows are taken FOR UPDATE SKIP
// LOCKED, so relays running at once claim different events and none waits for another;
// on SQLite the transaction holds the single write lock.
func (s *Store) ClaimOutbox(ctx context.Context, limit int) ([]*domain.Event, error) {
	if s.tx == nil {
		return nil, errors.New("db: ClaimOutbox outside a transaction")
	}
	lock := ""
	if s.dialect == DialectPostgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	cols := columnList(s.db.Table(eventType), "e.")
	rows := []*domain.Event{}
	err := s.tx.NewRaw(`WITH claimed AS (SELECT event_id FROM event_outbox ORDER BY event_id LIMIT ?`+lock+`)
SELECT `+cols+` FROM events AS e JOIN claimed ON claimed.event_id = e.id ORDER BY e.id`, orBatch(limit)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	for _, e := range rows {
		inUTC(e)
	}
	return rows, nil
}

// ReleaseOutbox removes events from the outbox.
func (s *Store) ReleaseOutbox(ctx context.Context, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	if _, err := s.w().NewRaw("DELETE FROM event_outbox WHERE event_id IN (?)", bun.In(eventIDs)).Exec(ctx); err != nil {
		return fmt.Errorf("release outbox: %w", err)
	}
	return nil
}

// DeleteEventsBefore deletes up to limit relayed events created before a moment (by
// id, which begins with the creation time), their deliveries and the attempts of those.
func (s *Store) DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	var ids []string
	err := s.r().NewRaw(`SELECT id FROM events AS e WHERE e.id < ?
	AND NOT EXISTS (SELECT 1 FROM event_outbox AS o WHERE o.event_id = e.id) ORDER BY e.id LIMIT ?`,
		domain.IDAt(domain.PrefixEvent, before), orBatch(limit)).Scan(ctx, &ids)
	if err != nil {
		return 0, fmt.Errorf("old events: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		in := bun.In(ids)
		if _, err := tx.NewRaw(`DELETE FROM delivery_attempts WHERE delivery_id IN
	(SELECT id FROM deliveries WHERE event_id IN (?))`, in).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewRaw("DELETE FROM deliveries WHERE event_id IN (?)", in).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewRaw("DELETE FROM events WHERE id IN (?)", in).Exec(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete old events: %w", err)
	}
	return len(ids), nil
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

// FindLiveWebhookEndpoints returns the endpoints of these projects that are not deleted.
func (s *Store) FindLiveWebhookEndpoints(ctx context.Context, projectIDs []string) ([]*domain.WebhookEndpoint, error) {
	if len(projectIDs) == 0 {
		return []*domain.WebhookEndpoint{}, nil
	}
	return findAll[domain.WebhookEndpoint](ctx, s.r(), "live webhook endpoints", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("project_id IN (?)", bun.In(projectIDs)).Where("deleted_at IS NULL").Order("id")
	})
}

// DeleteWebhookEndpoint marks the endpoint deleted; domain.ErrNotFound when it is
// missing or already deleted.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, id string, at time.Time) error {
	return s.updateEndpoint(ctx, id, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("deleted_at = ?", at)
	})
}

// RotateWebhookSecret sets the endpoint's current and previous secrets.
func (s *Store) RotateWebhookSecret(ctx context.Context, id, secret, previous string, previousExpiresAt time.Time) error {
	return s.updateEndpoint(ctx, id, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("secret = ?", secret).Set("previous_secret = ?", previous).
			Set("previous_secret_expires_at = ?", previousExpiresAt.UTC())
	})
}

// updateEndpoint applies set to an endpoint not deleted; domain.ErrNotFound otherwise.
func (s *Store) updateEndpoint(ctx context.Context, id string, set func(*bun.UpdateQuery) *bun.UpdateQuery) error {
	n, err := affected(set(s.w().NewUpdate().Model((*domain.WebhookEndpoint)(nil))).
		Where("id = ?", id).Where("deleted_at IS NULL").Exec(ctx))
	if err != nil {
		return fmt.Errorf("update webhook endpoint %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("webhook endpoint %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// MarkWebhookEndpointFailing sets failing_since unless it is set already.
func (s *Store) MarkWebhookEndpointFailing(ctx context.Context, id string, at time.Time) error {
	_, err := s.w().NewUpdate().Model((*domain.WebhookEndpoint)(nil)).Set("failing_since = ?", at.UTC()).
		Where("id = ?", id).Where("failing_since IS NULL").Exec(ctx)
	return err
}

// MarkWebhookEndpointHealthy clears failing_since.
func (s *Store) MarkWebhookEndpointHealthy(ctx context.Context, id string) error {
	_, err := s.w().NewUpdate().Model((*domain.WebhookEndpoint)(nil)).Set("failing_since = NULL").
		Where("id = ?", id).Where("failing_since IS NOT NULL").Exec(ctx)
	return err
}

// EnableWebhookEndpoint enables a disabled endpoint not deleted, clearing why it was
// disabled and since when it was failing; false when nothing changed.
func (s *Store) EnableWebhookEndpoint(ctx context.Context, id string) (bool, error) {
	n, err := affected(s.w().NewUpdate().Model((*domain.WebhookEndpoint)(nil)).Set("status = ?", domain.EndpointEnabled).
		Set("disabled_reason = ''").Set("disabled_at = NULL").Set("failing_since = NULL").
		Where("id = ?", id).Where("status = ?", domain.EndpointDisabled).Where("deleted_at IS NULL").Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("enable webhook endpoint %s: %w", id, err)
	}
	return n == 1, nil
}

// DisableWebhookEndpoint disables an enabled endpoint, when failingBefore is set only if
// it has been failing since before that moment.
func (s *Store) DisableWebhookEndpoint(ctx context.Context, id, reason string, at time.Time, failingBefore *time.Time) (bool, error) {
	q := s.w().NewUpdate().Model((*domain.WebhookEndpoint)(nil)).Set("status = ?", domain.EndpointDisabled).
		Set("disabled_reason = ?", reason).Set("disabled_at = ?", at.UTC()).
		Where("id = ?", id).Where("status = ?", domain.EndpointEnabled).Where("deleted_at IS NULL")
	if failingBefore != nil {
		q = q.Where("failing_since <= ?", failingBefore.UTC())
	}
	n, err := affected(q.Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("disable webhook endpoint %s: %w", id, err)
	}
	return n == 1, nil
}

// CreateDeliveries inserts deliveries, skipping any whose event and endpoint already
// have one.
func (s *Store) CreateDeliveries(ctx context.Context, ds []*domain.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	if _, err := s.w().NewInsert().Model(&ds).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("create deliveries: %w", err)
	}
	return nil
}

// FindDeliveryByID returns the delivery, or domain.ErrNotFound.
func (s *Store) FindDeliveryByID(ctx context.Context, id string) (*domain.Delivery, error) {
	return findOne[domain.Delivery](ctx, s.r(), "delivery "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindDeliveries returns one page of an endpoint's deliveries, newest first, each with
// its latest f.Attempts attempts, oldest first.
func (s *Store) FindDeliveries(ctx context.Context, f domain.DeliveryFilter) ([]*domain.Delivery, bool, error) {
	ds, more, err := findPage[domain.Delivery](ctx, s.r(), "deliveries", f.Page, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("endpoint_id = ?", f.EndpointID)
	})
	if err != nil || len(ds) == 0 {
		return ds, more, err
	}
	ids := make([]string, len(ds))
	byID := make(map[string]*domain.Delivery, len(ds))
	for i, d := range ds {
		ids[i], byID[d.ID] = d.ID, d
		d.History = []*domain.DeliveryAttempt{}
	}
	atts, err := findAll[domain.DeliveryAttempt](ctx, s.r(), "delivery attempts", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("delivery_id IN (?)", bun.In(ids)).Order("delivery_id", "id")
	})
	if err != nil {
		return nil, false, err
	}
	for _, a := range atts {
		d := byID[a.DeliveryID]
		d.History = append(d.History, a)
		if f.Attempts > 0 && len(d.History) > f.Attempts {
			d.History = d.History[1:]
		}
	}
	return ds, more, nil
}

// deliveryTargetRow is a delivery with its endpoint and event, read in one query.
type deliveryTargetRow struct {
	D domain.Delivery        `bun:"embed:d_"`
	E domain.WebhookEndpoint `bun:"embed:e_"`
	V domain.Event           `bun:"embed:v_"`
}

// FindDeliveryTarget returns a delivery with its endpoint (deleted or not) and its
// event, in one round trip: what an attempt needs. domain.ErrNotFound when any of the
// three is missing.
func (s *Store) FindDeliveryTarget(ctx context.Context, id string) (*domain.Delivery, *domain.WebhookEndpoint, *domain.Event, error) {
	// Every attempt runs it: prepared on PostgreSQL, a lookup by primary keys only.
	rows, err := s.queryHot(ctx, s.r(), s.deliveryTargetQuery(), id)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("find delivery %s: %w", id, err)
	}
	var found []deliveryTargetRow
	if err := s.db.ScanRows(ctx, rows, &found); err != nil {
		return nil, nil, nil, fmt.Errorf("find delivery %s: %w", id, err)
	}
	if len(found) == 0 {
		return nil, nil, nil, fmt.Errorf("delivery %s: %w", id, domain.ErrNotFound)
	}
	row := &found[0]
	return inUTC(&row.D), inUTC(&row.E), inUTC(&row.V), nil
}

var deliveryTargetQueries struct {
	once sync.Once
	q    *hotQuery
}

func (s *Store) deliveryTargetQuery() *hotQuery {
	deliveryTargetQueries.once.Do(func() {
		cols := func(model any, alias, prefix string) string {
			t := s.db.Table(reflect.TypeOf(model))
			out := make([]string, len(t.Fields))
			for i, f := range t.Fields {
				out[i] = alias + "." + string(f.SQLName) + " AS " + prefix + f.Name
			}
			return strings.Join(out, ", ")
		}
		deliveryTargetQueries.q = newHotQuery(`SELECT ` + cols(domain.Delivery{}, "d", "d_") + `, ` +
			cols(domain.WebhookEndpoint{}, "e", "e_") + `, ` + cols(domain.Event{}, "v", "v_") + `
FROM deliveries AS d JOIN webhook_endpoints AS e ON e.id = d.endpoint_id JOIN events AS v ON v.id = d.event_id
WHERE d.id = ?`)
	})
	return deliveryTargetQueries.q
}

// FindDueDeliveries returns up to limit pending deliveries due before a moment.
func (s *Store) FindDueDeliveries(ctx context.Context, before time.Time, limit int) ([]*domain.Delivery, error) {
	return findAll[domain.Delivery](ctx, s.r(), "due deliveries", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("status = ?", domain.DeliveryPending).Where("next_attempt_at < ?", before.UTC()).
			Order("next_attempt_at").Limit(orBatch(limit))
	})
}

// RecordDeliveryAttempt stores a and moves the delivery to d if it is still pending
// with fromAttempts attempts; otherwise only counts the attempt and returns false. On
// PostgreSQL the usual case is one statement (see writeAtOnce for the form).
func (s *Store) RecordDeliveryAttempt(ctx context.Context, a *domain.DeliveryAttempt, d *domain.Delivery, fromAttempts int) (bool, error) {
	won := false
	var err error
	if s.dialect == DialectPostgres {
		won, err = s.recordAttemptAtOnce(ctx, a, d, fromAttempts)
	} else {
		err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.NewInsert().Model(a).Exec(ctx); err != nil {
				return err
			}
			n, err := affected(tx.NewUpdate().Model((*domain.Delivery)(nil)).Set("status = ?", d.Status).
				Set("attempts = ?", d.Attempts).Set("next_attempt_at = ?", utcOrNil(d.NextAttemptAt)).
				Set("last_status_code = ?", d.LastStatusCode).Set("last_error = ?", d.LastError).
				Set("updated_at = ?", d.UpdatedAt.UTC()).
				Where("id = ?", d.ID).Where("status = ?", domain.DeliveryPending).Where("attempts = ?", fromAttempts).Exec(ctx))
			won = n == 1
			return err
		})
	}
	if err == nil && !won {
		_, err = s.w().NewUpdate().Model((*domain.Delivery)(nil)).Set("attempts = attempts + 1").
			Set("updated_at = ?", d.UpdatedAt.UTC()).Where("id = ?", d.ID).Exec(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("record attempt of delivery %s: %w", d.ID, err)
	}
	return won, nil
}

var recordAttemptQuery = newHotQuery(`WITH attempt AS (
	INSERT INTO delivery_attempts (id, delivery_id, attempt, status_code, duration_ms, response_snippet, error, next_attempt_at, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING 1),
moved AS (UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, last_error = ?, updated_at = ?
	WHERE id = ? AND status = 'pending' AND attempts = ? RETURNING 1)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM attempt)`)

// recordAttemptAtOnce is RecordDeliveryAttempt's insert and conditional update as one
// prepared statement: atomic without a transaction round trip.
func (s *Store) recordAttemptAtOnce(ctx context.Context, a *domain.DeliveryAttempt, d *domain.Delivery, fromAttempts int) (bool, error) {
	rows, err := s.queryHot(ctx, s.w(), recordAttemptQuery, a.ID, a.DeliveryID, a.Attempt, a.StatusCode, a.DurationMS,
		a.ResponseSnippet, a.Error, utcOrNil(a.NextAttemptAt), a.CreatedAt.UTC(),
		d.Status, d.Attempts, utcOrNil(d.NextAttemptAt), d.LastStatusCode, d.LastError, d.UpdatedAt.UTC(), d.ID, fromAttempts)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var moved, inserted int
	if rows.Next() {
		if err := rows.Scan(&moved, &inserted); err != nil {
			return false, err
		}
	}
	return moved == 1, rows.Err()
}

// FinishDelivery moves a pending delivery to status without an attempt.
func (s *Store) FinishDelivery(ctx context.Context, id, status, reason string, at time.Time) error {
	_, err := s.w().NewUpdate().Model((*domain.Delivery)(nil)).Set("status = ?", status).
		Set("next_attempt_at = NULL").Set("last_error = ?", reason).Set("updated_at = ?", at.UTC()).
		Where("id = ?", id).Where("status = ?", domain.DeliveryPending).Exec(ctx)
	if err != nil {
		return fmt.Errorf("finish delivery %s: %w", id, err)
	}
	return nil
}

// ReopenDelivery makes a delivery pending again, due at at.
func (s *Store) ReopenDelivery(ctx context.Context, id string, at time.Time) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.Delivery)(nil)).Set("status = ?", domain.DeliveryPending).
		Set("next_attempt_at = ?", at.UTC()).Set("updated_at = ?", at.UTC()).Where("id = ?", id).Exec(ctx))
	if err != nil {
		return fmt.Errorf("reopen delivery %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("delivery %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

func utcOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

// jsonObject is m, or an empty object for none: options are an object by contract.
func jsonObject(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return json.RawMessage("{}")
	}
	return m
}

// jsonOrNull stores absent JSON as JSON null, for NOT NULL json columns.
func jsonOrNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}
