package door

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/logging"
)

// Config is what a front door mounts the plumbing with.
type Config struct {
	// Limits is the request rate limit, one bucket per key (or per address) for every
	// door.
	Limits *domain.RateLimits
	// Authenticators are asked in order; the first that finds its credential in a
	// request decides who it acts for.
	Authenticators []Authenticator
	// Refuse answers a request refused before its handler ran (no or a bad credential,
	// rate limited), in the door's own shape.
	Refuse func(w http.ResponseWriter, r *http.Request, err error)
	// SocketsAuthenticateLater lets a websocket upgrade that carries no credential
	// through, charged to its address, to authenticate in its first message
	// (AuthenticateInit) before anything runs.
	SocketsAuthenticateLater bool
	// Log is the base of every request's logger.
	Log *slog.Logger
}

// Door is the plumbing of one front door.
type Door struct {
	cfg Config
}

// New returns the plumbing; a nil Log logs to slog's default.
func New(cfg Config) *Door {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Door{cfg: cfg}
}

// Mount is the outermost layer of a door: it gives every request a fresh req_ id,
// echoed in X-Request-Id and carried by the request's logger (Logger), and logs one
// line per request when it ends (a websocket's when it closes).
func (d *Door) Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := domain.NewID(domain.PrefixRequest)
		w.Header().Set("X-Request-Id", id)
		log := d.cfg.Log.With("request_id", id)
		ctx := context.WithValue(context.WithValue(r.Context(), ctxRequestID, id), ctxLogger, log)
		probe := r.URL.Path == "/healthz" || r.URL.Path == "/metrics"
		var span trace.Span
		if !probe {
			ctx, span = startServerSpan(ctx, r, id)
		}
		start := time.Now()
		rec := &logging.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))
		if probe {
			return
		}
		if rec.Status == 0 {
			rec.Status = http.StatusOK // what net/http sends for a handler that wrote nothing
		}
		endServerSpan(span, rec.Status)
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", rec.Status),
			slog.Int("bytes", rec.Bytes), slog.Duration("duration", time.Since(start))}
		if isSocket(r) {
			attrs = append(attrs, slog.Bool("websocket", true))
		}
		log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
	})
}

// Authenticate lets through a request whose credential an Authenticator accepts, with
// its identity in the context (Principal, Logger), after charging its rate-limit token;
// every answer carries the X-RateLimit-* headers. A refusal — rate limited first, then
// the authentication's — is answered by Config.Refuse (domain.RateLimits.Admit).
func (d *Door) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := domain.ClientAddr(r.RemoteAddr)
		id, authErr := d.identify(r, ip)
		var p *domain.Principal
		if id != nil {
			p = id.Principal
		}
		dec, err := d.cfg.Limits.Admit(r.Context(), p, authErr, ip)
		setRateHeaders(w.Header(), dec)
		if err != nil {
			d.cfg.Refuse(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), ctxClientAddr, ip)
		if id != nil {
			ctx = withIdentity(ctx, id)
		} else if isSocket(r) {
			// It authenticates in its first message, which may rest on the upgrade's
			// cookie and Origin (Sessions.AuthenticateInit).
			ctx = context.WithValue(ctx, ctxUpgrade, r)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Public lets through a request that needs no credential after charging its client
// address's rate-limit token, with the same headers as every other answer.
func (d *Door) Public(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := domain.ClientAddr(r.RemoteAddr)
		dec, err := d.cfg.Limits.Admit(r.Context(), nil, nil, ip)
		setRateHeaders(w.Header(), dec)
		if err != nil {
			d.cfg.Refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxClientAddr, ip)))
	})
}

// identify is the authentication sequence: a credential in the query string is refused
// even beside a valid one; then the first Authenticator whose credential the request
// carries decides. A request with none is refused — unless it is a websocket that will
// authenticate in its first message.
func (d *Door) identify(r *http.Request, ip netip.Addr) (*Identity, error) {
	if err := domain.CheckQueryForKey(r.URL.Query().Has); err != nil {
		return nil, err
	}
	for _, a := range d.cfg.Authenticators {
		if id, err := a.Authenticate(r, ip); id != nil || err != nil {
			return id, err
		}
	}
	if d.cfg.SocketsAuthenticateLater && isSocket(r) {
		return nil, nil
	}
	return nil, domain.NoCredentials()
}

// AuthenticateInit authenticates a websocket from its first message's payload, when its
// upgrade carried no credential (Authenticate let it through for this); a websocket
// authenticated at its upgrade keeps that identity. The context returned carries it.
func (d *Door) AuthenticateInit(ctx context.Context, payload map[string]any) (context.Context, error) {
	if IdentityOf(ctx) != nil {
		return ctx, nil
	}
	for _, a := range d.cfg.Authenticators {
		ia, ok := a.(InitAuthenticator)
		if !ok {
			continue
		}
		id, err := ia.AuthenticateInit(ctx, payload, ClientAddr(ctx))
		if err != nil {
			return ctx, err
		}
		if id != nil {
			return withIdentity(ctx, id), nil
		}
	}
	return ctx, domain.NoCredentials()
}

// AdmitOperation takes the rate-limit token of one operation over a connection that
// outlives a request (a websocket's): each is charged as a request is. Codes:
// rate_limited.
func (d *Door) AdmitOperation(ctx context.Context) error {
	_, err := d.cfg.Limits.Admit(ctx, Principal(ctx), nil, ClientAddr(ctx))
	return err
}

func isSocket(r *http.Request) bool { return r.Header.Get("Upgrade") != "" }

// setRateHeaders sets the X-RateLimit-* headers of a decision.
func setRateHeaders(h http.Header, d domain.RateDecision) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(int((d.Reset+time.Second-1)/time.Second)))
}

// startServerSpan starts the server span of a request, a child of the traceparent the
// request carries, if any. It is named by the method until the door that routes the
// request names it by its route (SetRoute) or operation.
func startServerSpan(ctx context.Context, r *http.Request, id string) (context.Context, trace.Span) {
	ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(r.Header))
	return domain.Tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("filemill.request_id", id)))
}

func endServerSpan(span trace.Span, status int) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
}

// SetRoute names the request's server span by the route that serves it ("POST
// /v1/jobs"): a bounded name, never the path with its ids.
func SetRoute(ctx context.Context, route string) {
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.SetName(route)
		span.SetAttributes(attribute.String("http.route", route))
	}
}
