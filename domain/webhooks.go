package domain

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/filemill/filemill/domain/netguard"
)

// WebhooksPorts is what Webhooks uses of the Store: endpoints and their deliveries, the
// events (outbox) it relays and lists, and the projects a request is scoped to.
type WebhooksPorts interface {
	Transactor
	WebhookStore
	EventStore
	TenantStore
}

// Webhooks manages webhook endpoints, relays the outbox to them and to live
// subscribers, and makes the delivery attempts.
type Webhooks struct {
	Store  WebhooksPorts
	Clock  Clock
	Config Config
	// Guard vets endpoint URLs at creation; nil checks their shape only.
	Guard *netguard.Guard
	// Bus carries relayed events to live subscribers; nil publishes nothing.
	Bus EventBus
	// Deliveries schedules delivery attempts; nil schedules nothing (the due-delivery
	// sweep, or a test, drives them).
	Deliveries DeliveryQueue
	// Sender makes the HTTP requests of delivery attempts.
	Sender WebhookSender
}

// inTx runs fn in one transaction, on the ports Webhooks declares.
func (w *Webhooks) inTx(ctx context.Context, fn func(tx WebhooksPorts) error) error {
	return w.Store.InTx(ctx, func(tx Store) error { return fn(tx) })
}

// NewWebhookEndpoint is the request to register an endpoint.
type NewWebhookEndpoint struct {
	URL           string   `json:"url"`
	EnabledEvents []string `json:"enabled_events"`
	ProjectID     string   `json:"project_id"`
}

// CreateEndpoint registers an endpoint and returns it with its secret (shown once).
// Codes: invalid_request (url, enabled_events), conflict (same URL already registered),
// not_found / key_restricted (project).
func (w *Webhooks) CreateEndpoint(ctx context.Context, p *Principal, req NewWebhookEndpoint) (*WebhookEndpoint, error) {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return nil, err
	}
	if err := w.vetURL(ctx, req.URL); err != nil {
		return nil, err
	}
	if len(req.EnabledEvents) == 0 {
		return nil, InvalidParam("enabled_events", "enabled_events must list at least one event")
	}
	events := make([]string, 0, len(req.EnabledEvents))
	for _, e := range req.EnabledEvents {
		if !slices.Contains(SubscribableEvents, e) {
			return nil, InvalidParam("enabled_events", "unknown event %q (known: %s)", e, strings.Join(SubscribableEvents, ", "))
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	prj, err := p.ResolveProject(ctx, w.Store, req.ProjectID)
	if err != nil {
		return nil, err
	}
	ep := &WebhookEndpoint{
		ID: NewID(PrefixWebhookEndpoint), OrganizationID: p.Organization.ID, ProjectID: prj.ID,
		Environment: p.Environment(), URL: req.URL, EnabledEvents: events, Secret: newWebhookSecret(),
		Status: EndpointEnabled, CreatedAt: w.Clock.Now(),
	}
	err = w.inTx(ctx, func(tx WebhooksPorts) error {
		existing, _, err := tx.FindWebhookEndpoints(ctx, WebhookEndpointFilter{
			Scope: Scope{OrganizationID: p.Organization.ID, ProjectID: prj.ID}, Environment: p.Environment(),
			Page: Page{Limit: MaxPageSize}})
		if err != nil {
			return err
		}
		for _, e := range existing {
			if e.URL == req.URL && e.Status == EndpointEnabled {
				return &Error{Code: CodeConflict, Message: "an endpoint with this url is already registered",
					Param: "url", Details: map[string]any{"webhook_endpoint_id": e.ID}}
			}
		}
		if len(existing) >= w.Config.MaxWebhookEndpoints {
			return &Error{Code: CodeConflict, Message: fmt.Sprintf("a project may have at most %d webhook endpoints per environment", w.Config.MaxWebhookEndpoints)}
		}
		return tx.CreateWebhookEndpoint(ctx, ep)
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// ListEndpoints lists endpoints newest first. Codes: invalid_request (page).
func (w *Webhooks) ListEndpoints(ctx context.Context, p *Principal, projectID string, page Page) (List[*WebhookEndpoint], error) {
	if err := p.RequireScope(ScopeWebhooksRead); err != nil {
		return List[*WebhookEndpoint]{}, err
	}
	if err := ValidatePage(&page, PrefixWebhookEndpoint); err != nil {
		return List[*WebhookEndpoint]{}, err
	}
	scope, err := listScope(ctx, w.Store, p, projectID)
	if err != nil {
		return List[*WebhookEndpoint]{}, err
	}
	if page.StartingAfter != "" {
		err := checkCursor(ctx, func(ctx context.Context) (string, string, Environment, error) {
			e, err := w.Store.FindWebhookEndpointByID(ctx, page.StartingAfter)
			if err != nil {
				return "", "", "", err
			}
			return e.OrganizationID, e.ProjectID, e.Environment, nil
		}, scope, p.Environment())
		if err != nil {
			return List[*WebhookEndpoint]{}, err
		}
	}
	data, more, err := w.Store.FindWebhookEndpoints(ctx, WebhookEndpointFilter{Scope: scope, Environment: p.Environment(), Page: page})
	return List[*WebhookEndpoint]{Data: data, HasMore: more}, err
}

// FindEndpoint returns an endpoint the key may read. Codes: insufficient_scope,
// not_found, environment_mismatch, key_restricted.
func (w *Webhooks) FindEndpoint(ctx context.Context, p *Principal, id string) (*WebhookEndpoint, error) {
	if err := p.RequireScope(ScopeWebhooksRead); err != nil {
		return nil, err
	}
	return w.findEndpoint(ctx, p, id)
}

// findEndpoint returns an endpoint the key may see, whatever its scopes: the callers
// check the scope of what they do with it. Codes: not_found, environment_mismatch,
// key_restricted.
func (w *Webhooks) findEndpoint(ctx context.Context, p *Principal, id string) (*WebhookEndpoint, error) {
	if !ValidID(PrefixWebhookEndpoint, id) {
		return nil, NotFound("webhook endpoint")
	}
	ep, err := w.Store.FindWebhookEndpointByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, NotFound("webhook endpoint")
	}
	if err != nil {
		return nil, err
	}
	if err := p.CheckResource("webhook endpoint", ep.OrganizationID, ep.ProjectID, ep.Environment); err != nil {
		return nil, err
	}
	return ep, nil
}

// DeleteEndpoint stops all delivery to an endpoint. Codes: not_found, environment_mismatch, key_restricted.
func (w *Webhooks) DeleteEndpoint(ctx context.Context, p *Principal, id string) error {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return err
	}
	if _, err := w.findEndpoint(ctx, p, id); err != nil {
		return err
	}
	err := w.Store.DeleteWebhookEndpoint(ctx, id, w.Clock.Now())
	if errors.Is(err, ErrNotFound) {
		return NotFound("webhook endpoint")
	}
	return err
}

// vetURL checks an endpoint URL: its shape, and where it leads, with the same guard as
// from_url. Codes: invalid_request (url), timeout (its name could not be resolved).
func (w *Webhooks) vetURL(ctx context.Context, raw string) error {
	if err := validateWebhookURL(raw); err != nil {
		return err
	}
	g := w.Guard
	if g == nil {
		g = &netguard.Guard{}
		if _, err := g.ParseURL(raw); err != nil {
			return InvalidParam("url", "url %s", err.Error())
		}
		return nil
	}
	_, err := g.Check(ctx, raw)
	var re *netguard.RefusedError
	switch {
	case errors.As(err, &re):
		return InvalidParam("url", "url %s", re.Reason)
	case errors.Is(err, netguard.ErrLookupTimeout):
		return &Error{Code: CodeTimeout, Param: "url", Message: "the host of url could not be resolved in time"}
	}
	return err
}

func validateWebhookURL(raw string) error {
	if raw == "" {
		return InvalidParam("url", "url is required")
	}
	if len(raw) > 2048 {
		return InvalidParam("url", "url must be at most 2048 characters")
	}
	if err := CheckText("url", raw, 0); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return InvalidParam("url", "url must be an absolute URL")
	}
	if u.Scheme != "https" {
		return InvalidParam("url", "url must use https")
	}
	if u.User != nil {
		return InvalidParam("url", "url must not carry credentials")
	}
	return nil
}

func newWebhookSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// listScope is the scope of a list request: one project when project_id is given
// (checked), otherwise the key's restriction, otherwise the whole organization.
func listScope(ctx context.Context, store TenantStore, p *Principal, projectID string) (Scope, error) {
	scope := Scope{OrganizationID: p.Organization.ID}
	if projectID != "" {
		if !ValidID(PrefixProject, projectID) {
			return scope, InvalidParam("project_id", "project_id must be a project id (prj_ followed by 26 characters)")
		}
		prj, err := p.ResolveProject(ctx, store, projectID)
		if err != nil {
			return scope, err
		}
		scope.ProjectID = prj.ID
		return scope, nil
	}
	if len(p.Key.AllowedProjects) > 0 {
		// A restricted key without project_id sees its own project only.
		scope.ProjectID = p.Key.ProjectID
	}
	return scope, nil
}
