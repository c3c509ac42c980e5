package domain

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Webhook delivery: Standard Webhooks signatures, the retry schedule, what disables an
// endpoint. The HTTP request itself is the WebhookSender's; the timing of attempts the
// DeliveryQueue's.

// WebhookRetrySchedule spaces the automatic attempts of a delivery: the first retry
// about 5 s after the first attempt, the last about 28 h after it. A delivery that fails
// all of them is marked failed.
var WebhookRetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Delivery rules.
const (
	// WebhookDisableAfter disables an endpoint whose every attempt failed for this long.
	WebhookDisableAfter = 72 * time.Hour
	// WebhookSecretOverlap is how long the secret replaced by a rotation keeps signing.
	WebhookSecretOverlap = 24 * time.Hour
	// maxRetryAfter caps how far a Retry-After answer pushes the next attempt.
	maxRetryAfter = 24 * time.Hour
	// DeliveryAttemptsShown is how many of a delivery's latest attempts a list shows.
	DeliveryAttemptsShown = 20
	// ResponseSnippetBytes is how much of an answer's body an attempt keeps.
	ResponseSnippetBytes = 1024
)

// WebhookRequest is one signed POST to an endpoint.
type WebhookRequest struct {
	EndpointID string
	URL        string
	Header     map[string]string
	Body       []byte
	// Event is the span that committed the event: an attempt's span links to it.
	Event trace.SpanContext
}

// WebhookResponse is how an attempt went: a status code, or Err when no answer came.
type WebhookResponse struct {
	StatusCode int
	RetryAfter time.Duration // from a Retry-After header; 0 when none
	Snippet    string        // the start of the body
	Duration   time.Duration
	Err        string // why no answer came (refused address, timeout, TLS, connection)
}

// WebhookSender makes the HTTP request of an attempt: HTTPS, the SSRF guard on every
// connection, a 15 s timeout, no redirects followed.
type WebhookSender interface {
	Send(ctx context.Context, req *WebhookRequest) *WebhookResponse
}

// DeliveryTask asks for attempt number Attempt+1 of a delivery (Attempt is how many
// were made before), not before At; a zero At is at once.
type DeliveryTask struct {
	DeliveryID string
	EndpointID string
	Attempt    int
	At         time.Time
	// Manual marks an attempt asked for through the API, which runs beside any
	// scheduled one.
	Manual bool
}

// DeliveryQueue schedules delivery attempts. Scheduling the same attempt twice is
// harmless: an attempt whose delivery has moved on does nothing.
type DeliveryQueue interface {
	EnqueueDelivery(ctx context.Context, t DeliveryTask) error
}

// SignWebhook returns the Standard Webhooks signature "v1,<base64 HMAC-SHA256>" of a
// message for a "whsec_" secret.
func SignWebhook(secret, msgID string, at time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// signatures returns the webhook-signature header: one signature per secret in force,
// space separated, the current one first.
func (e *WebhookEndpoint) signatures(msgID string, at, now time.Time, body []byte) (string, error) {
	sig, err := SignWebhook(e.Secret, msgID, at, body)
	if err != nil {
		return "", err
	}
	if e.PreviousSecret != "" && e.PreviousSecretExpiresAt != nil && now.Before(*e.PreviousSecretExpiresAt) {
		old, err := SignWebhook(e.PreviousSecret, msgID, at, body)
		if err != nil {
			return "", err
		}
		sig += " " + old
	}
	return sig, nil
}

// WebhookHeaders returns the headers that sign body as message msgID sent at at.
func (e *WebhookEndpoint) WebhookHeaders(msgID string, at time.Time, body []byte) (map[string]string, error) {
	sig, err := e.signatures(msgID, at, at, body)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"Content-Type":      "application/json",
		"webhook-id":        msgID,
		"webhook-timestamp": strconv.FormatInt(at.Unix(), 10),
		"webhook-signature": sig,
	}, nil
}

// Attempt makes attempt t.Attempt+1 of a delivery, records it, and schedules the next
// when it failed and the schedule allows. An attempt whose delivery has moved on (done,
// or another attempt recorded) does nothing; so does one whose endpoint was deleted or
// disabled, which ends the delivery instead.
func (w *Webhooks) Attempt(ctx context.Context, t DeliveryTask) error {
	d, ep, ev, err := w.Store.FindDeliveryTarget(ctx, t.DeliveryID)
	if errors.Is(err, ErrNotFound) {
		// Swept with its event, or its event alone is gone.
		if d, err = w.Store.FindDeliveryByID(ctx, t.DeliveryID); err == nil && d.Status == DeliveryPending {
			return w.Store.FinishDelivery(ctx, d.ID, DeliveryFailed, "the event has expired", w.Clock.Now())
		}
		return nil
	}
	if err != nil {
		return err
	}
	if d.Status != DeliveryPending || d.Attempts != t.Attempt {
		return nil
	}
	now := w.Clock.Now()
	if ep.DeletedAt != nil {
		return w.Store.FinishDelivery(ctx, d.ID, DeliveryFailed, "the endpoint was deleted", now)
	}
	if ep.Status != EndpointEnabled {
		return w.Store.FinishDelivery(ctx, d.ID, DeliveryFailed, "the endpoint is disabled", now)
	}
	body, err := json.Marshal(ev.View())
	if err != nil {
		return err
	}
	header, err := ep.WebhookHeaders(ev.ID, now, body)
	if err != nil {
		return err
	}
	res := w.Sender.Send(ctx, &WebhookRequest{EndpointID: ep.ID, URL: ep.URL, Header: header, Body: body,
		Event: SpanOf(ev.TraceParent)})
	if ctx.Err() != nil && res.StatusCode == 0 {
		// Shutting down: the attempt did not happen; the task comes back.
		return ctx.Err()
	}
	return w.record(context.WithoutCancel(ctx), d, ep, t, res)
}

// record stores an attempt's outcome and what follows from it.
func (w *Webhooks) record(ctx context.Context, d *Delivery, ep *WebhookEndpoint, t DeliveryTask, res *WebhookResponse) error {
	now := w.Clock.Now()
	n := t.Attempt + 1
	a := &DeliveryAttempt{ID: NewID(PrefixDeliveryAttempt), DeliveryID: d.ID, Attempt: n, StatusCode: res.StatusCode,
		DurationMS: int(res.Duration.Milliseconds()), ResponseSnippet: clipText(res.Snippet, ResponseSnippetBytes),
		Error: clipText(res.Err, 512), CreatedAt: now}
	next := *d
	next.Attempts, next.LastStatusCode, next.UpdatedAt = n, res.StatusCode, now
	next.LastError = a.Error
	if a.Error == "" && !success(res.StatusCode) {
		next.LastError = fmt.Sprintf("the endpoint answered %d", res.StatusCode)
	}
	var disable string
	switch {
	case success(res.StatusCode):
		next.Status, next.NextAttemptAt, next.LastError = DeliverySucceeded, nil, ""
	case res.StatusCode == 410:
		next.Status, next.NextAttemptAt = DeliveryFailed, nil
		disable = "the endpoint answered 410 Gone"
	case n-1 < len(WebhookRetrySchedule):
		delay := WebhookRetrySchedule[n-1]
		if ra := min(res.RetryAfter, maxRetryAfter); ra > delay {
			delay = ra
		}
		at := now.Add(delay)
		next.Status, next.NextAttemptAt, a.NextAttemptAt = DeliveryPending, &at, &at
	default:
		next.Status, next.NextAttemptAt = DeliveryFailed, nil
	}
	won := false
	write := func(tx WebhookStore) error {
		var err error
		if won, err = tx.RecordDeliveryAttempt(ctx, a, &next, t.Attempt); err != nil {
			return err
		}
		switch {
		case disable != "":
			_, err = tx.DisableWebhookEndpoint(ctx, ep.ID, disable, now, nil)
			return err
		case success(res.StatusCode):
			if ep.FailingSince != nil {
				return tx.MarkWebhookEndpointHealthy(ctx, ep.ID)
			}
			return nil
		}
		if ep.FailingSince == nil {
			return tx.MarkWebhookEndpointFailing(ctx, ep.ID, now)
		}
		before := now.Add(-WebhookDisableAfter)
		if !ep.FailingSince.After(before) {
			reason := fmt.Sprintf("every delivery failed from %s for %s", ep.FailingSince.UTC().Format(time.RFC3339), WebhookDisableAfter)
			_, err := tx.DisableWebhookEndpoint(ctx, ep.ID, reason, now, &before)
			return err
		}
		return nil
	}
	var err error
	if success(res.StatusCode) && ep.FailingSince == nil {
		// The usual case writes the attempt alone: no transaction needed.
		err = write(w.Store)
	} else {
		err = w.inTx(ctx, func(tx WebhooksPorts) error { return write(tx) })
	}
	if err != nil {
		return fmt.Errorf("record attempt of delivery %s: %w", d.ID, err)
	}
	if won && next.Status == DeliveryPending && w.Deliveries != nil {
		return w.Deliveries.EnqueueDelivery(ctx, DeliveryTask{DeliveryID: d.ID, EndpointID: ep.ID, Attempt: n, At: *next.NextAttemptAt})
	}
	return nil
}

func success(code int) bool { return code >= 200 && code <= 299 }

// clipText keeps at most n bytes of s, cut at a character boundary, without control
// characters other than newlines and tabs.
func clipText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xc0 != 0x80 }

// RequeueDueDeliveries schedules again the attempts due for longer than grace: their
// task was lost (a relay or worker stopped between commit and enqueue, an embedded
// Redis restarted). Returns how many it scheduled.
func (w *Webhooks) RequeueDueDeliveries(ctx context.Context, grace time.Duration, limit int) (int, error) {
	ds, err := w.Store.FindDueDeliveries(ctx, w.Clock.Now().Add(-grace), limit)
	if err != nil || w.Deliveries == nil {
		return 0, err
	}
	for _, d := range ds {
		if err := w.Deliveries.EnqueueDelivery(ctx, DeliveryTask{DeliveryID: d.ID, EndpointID: d.EndpointID,
			Attempt: d.Attempts}); err != nil {
			return 0, err
		}
	}
	return len(ds), nil
}

// findWritableEndpoint returns an enabled endpoint the key may change.
// Codes: insufficient_scope, not_found, environment_mismatch, key_restricted, conflict
// (disabled).
func (w *Webhooks) findEnabledEndpoint(ctx context.Context, p *Principal, id string) (*WebhookEndpoint, error) {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return nil, err
	}
	ep, err := w.findEndpoint(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if ep.Status != EndpointEnabled {
		return nil, &Error{Code: CodeConflict, Message: "the endpoint is disabled: " + ep.DisabledReason,
			Details: map[string]any{"status": ep.Status}}
	}
	return ep, nil
}

// SendTest queues a signed webhook.test event — the ping — to an endpoint and returns
// the event and its delivery, recorded like any other. It is delivered to this endpoint
// only: no endpoint can list webhook.test, so no subscriber receives one it did not
// ask for, and it is neither listed among the events nor published to subscriptions.
// Codes: not_found, environment_mismatch, key_restricted, conflict (disabled endpoint).
func (w *Webhooks) SendTest(ctx context.Context, p *Principal, id string) (*Event, *Delivery, error) {
	ep, err := w.findEnabledEndpoint(ctx, p, id)
	if err != nil {
		return nil, nil, err
	}
	now := w.Clock.Now()
	e, err := NewEvent(ctx, EventWebhookTest, ep.OrganizationID, ep.ProjectID, ep.Environment, ep.ID, ep.View(), now)
	if err != nil {
		return nil, nil, err
	}
	d := &Delivery{ID: NewID(PrefixDelivery), EndpointID: ep.ID, EventID: e.ID, EventType: e.Type, Status: DeliveryPending,
		NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now}
	err = w.inTx(ctx, func(tx WebhooksPorts) error {
		if err := tx.CreateEvent(ctx, e); err != nil {
			return err
		}
		return tx.CreateDeliveries(ctx, []*Delivery{d})
	})
	if err != nil {
		return nil, nil, err
	}
	w.schedule(ctx, DeliveryTask{DeliveryID: d.ID, EndpointID: ep.ID})
	return e, d, nil
}

// schedule hands an attempt to the queue; a failure is left to the due-delivery sweep.
func (w *Webhooks) schedule(ctx context.Context, t DeliveryTask) {
	if w.Deliveries != nil {
		_ = w.Deliveries.EnqueueDelivery(context.WithoutCancel(ctx), t)
	}
}

// RotateSecret gives an endpoint a new secret, returned with it this once; the old one
// keeps signing beside it for WebhookSecretOverlap. Codes: not_found,
// environment_mismatch, key_restricted.
func (w *Webhooks) RotateSecret(ctx context.Context, p *Principal, id string) (*WebhookEndpoint, error) {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return nil, err
	}
	ep, err := w.findEndpoint(ctx, p, id)
	if err != nil {
		return nil, err
	}
	until := w.Clock.Now().Add(WebhookSecretOverlap)
	secret := newWebhookSecret()
	err = w.Store.RotateWebhookSecret(ctx, ep.ID, secret, ep.Secret, until)
	if errors.Is(err, ErrNotFound) {
		return nil, NotFound("webhook endpoint")
	}
	if err != nil {
		return nil, err
	}
	ep.Secret, ep.PreviousSecret, ep.PreviousSecretExpiresAt = secret, ep.Secret, &until
	return ep, nil
}

// ListDeliveries lists an endpoint's deliveries newest first, each with its latest
// attempts. Codes: invalid_request (page), not_found, environment_mismatch,
// key_restricted.
func (w *Webhooks) ListDeliveries(ctx context.Context, p *Principal, endpointID string, page Page) (List[*Delivery], error) {
	if err := p.RequireScope(ScopeWebhooksRead); err != nil {
		return List[*Delivery]{}, err
	}
	ep, err := w.findEndpoint(ctx, p, endpointID)
	if err != nil {
		return List[*Delivery]{}, err
	}
	if err := ValidatePage(&page, PrefixDelivery); err != nil {
		return List[*Delivery]{}, err
	}
	if page.StartingAfter != "" {
		d, err := w.Store.FindDeliveryByID(ctx, page.StartingAfter)
		if err != nil || d.EndpointID != ep.ID {
			return List[*Delivery]{}, InvalidParam("starting_after", "starting_after does not name an item of this list")
		}
	}
	data, more, err := w.Store.FindDeliveries(ctx, DeliveryFilter{EndpointID: ep.ID, Attempts: DeliveryAttemptsShown, Page: page})
	return List[*Delivery]{Data: data, HasMore: more}, err
}

// RetryDelivery makes one more attempt of a delivery now, whatever its status; a
// failure of it follows the schedule from the attempts made so far. Codes: not_found,
// environment_mismatch, key_restricted, conflict (disabled endpoint).
func (w *Webhooks) RetryDelivery(ctx context.Context, p *Principal, endpointID, deliveryID string) (*Delivery, error) {
	ep, err := w.findEnabledEndpoint(ctx, p, endpointID)
	if err != nil {
		return nil, err
	}
	if !ValidID(PrefixDelivery, deliveryID) {
		return nil, NotFound("delivery")
	}
	d, err := w.Store.FindDeliveryByID(ctx, deliveryID)
	if errors.Is(err, ErrNotFound) || (err == nil && d.EndpointID != ep.ID) {
		return nil, NotFound("delivery")
	}
	if err != nil {
		return nil, err
	}
	now := w.Clock.Now()
	if err := w.Store.ReopenDelivery(ctx, d.ID, now); err != nil {
		return nil, err
	}
	d.Status, d.NextAttemptAt, d.UpdatedAt = DeliveryPending, &now, now
	w.schedule(ctx, DeliveryTask{DeliveryID: d.ID, EndpointID: ep.ID, Attempt: d.Attempts, Manual: true})
	d.History = []*DeliveryAttempt{}
	if ds, _, err := w.Store.FindDeliveries(ctx, DeliveryFilter{EndpointID: ep.ID, Attempts: DeliveryAttemptsShown,
		Page: Page{Limit: 1, StartingAfter: nextID(d.ID)}}); err == nil && len(ds) == 1 && ds[0].ID == d.ID {
		d.History = ds[0].History
	}
	return d, nil
}

// nextID is an id just above id, so a newest-first page starting after it begins at id.
func nextID(id string) string { return id + "~" }

// EventQuery asks for a page of events.
type EventQuery struct {
	ProjectID string
	Type      string
	Page
}

// ListEvents lists the events webhooks carry, newest first, for the retention period:
// what an integrator reconciles with after an outage. Codes: invalid_request (type,
// project_id, page).
func (w *Webhooks) ListEvents(ctx context.Context, p *Principal, q EventQuery) (List[*Event], error) {
	if err := p.RequireScope(ScopeWebhooksRead); err != nil {
		return List[*Event]{}, err
	}
	types := SubscribableEvents
	if q.Type != "" {
		if !slices.Contains(SubscribableEvents, q.Type) {
			return List[*Event]{}, InvalidParam("type", "unknown event type %q (known: %s)", q.Type, strings.Join(SubscribableEvents, ", "))
		}
		types = []string{q.Type}
	}
	if err := ValidatePage(&q.Page, PrefixEvent); err != nil {
		return List[*Event]{}, err
	}
	scope, err := listScope(ctx, w.Store, p, q.ProjectID)
	if err != nil {
		return List[*Event]{}, err
	}
	if q.StartingAfter != "" {
		err := checkCursor(ctx, func(ctx context.Context) (string, string, Environment, error) {
			e, err := w.Store.FindEventByID(ctx, q.StartingAfter)
			if err != nil {
				return "", "", "", err
			}
			return e.OrganizationID, e.ProjectID, e.Environment, nil
		}, scope, p.Environment())
		if err != nil {
			return List[*Event]{}, err
		}
	}
	data, more, err := w.Store.FindEvents(ctx, EventFilter{Scope: scope, Environment: p.Environment(), Types: types,
		Since: w.Clock.Now().Add(-w.Config.EventRetention), Page: q.Page})
	return List[*Event]{Data: data, HasMore: more}, err
}

// FindEvent returns one event webhooks carry. Codes: not_found, environment_mismatch,
// key_restricted.
func (w *Webhooks) FindEvent(ctx context.Context, p *Principal, id string) (*Event, error) {
	if err := p.RequireScope(ScopeWebhooksRead); err != nil {
		return nil, err
	}
	if !ValidID(PrefixEvent, id) {
		return nil, NotFound("event")
	}
	e, err := w.Store.FindEventByID(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && (!slices.Contains(SubscribableEvents, e.Type) && e.Type != EventWebhookTest ||
		e.CreatedAt.Before(w.Clock.Now().Add(-w.Config.EventRetention)))) {
		return nil, NotFound("event")
	}
	if err != nil {
		return nil, err
	}
	if err := p.CheckResource("event", e.OrganizationID, e.ProjectID, e.Environment); err != nil {
		return nil, err
	}
	return e, nil
}
