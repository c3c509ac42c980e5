package graph

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// ServerConfig holds the settings of the GraphQL door (Config is gqlgen's, of the
// executable schema).
type ServerConfig struct {
	// MaxDepth, MaxComplexity and MaxAliases bound an operation before it runs,
	// introspection included (see cost.go for what a field costs).
	MaxDepth      int
	MaxComplexity int
	MaxAliases    int
	// MaxTokens bounds a query's length in tokens, and MaxSelections the selections
	// validating its document walks (each operation with every fragment it spreads):
	// both are refused before the document is validated.
	MaxTokens     int
	MaxSelections int
	// MaxResponseBytes bounds one answer (a subscription's, each message): a larger one
	// is replaced by a response_too_large error.
	MaxResponseBytes int64
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// RequestTimeout bounds a query or mutation.
	RequestTimeout time.Duration
	// PersistedQueries is how many automatic persisted queries one process remembers.
	PersistedQueries int
	// KeepAlive is how often an idle websocket is pinged (graphql-transport-ws) or sent
	// a keep-alive message (graphql-ws).
	KeepAlive time.Duration
	// KeyRecheck is how often a websocket's key is checked again: a revoked key's
	// subscriptions end within it.
	KeyRecheck time.Duration
	// Resync is how often a subscription reads its subject again, so a change the best
	// effort event stream lost (a relay that died, Redis reconnecting) still arrives.
	Resync time.Duration
	// LoaderWait is how long a loader gathers keys before it reads: the fields of a
	// list's items are resolved concurrently, within microseconds of each other, so a
	// page of jobs reads its files in one statement. It is also how long the first
	// field that reads through a loader waits.
	LoaderWait time.Duration
	// MaxSubscriptionsPerConnection and MaxSubscriptionsPerKey bound the subscriptions
	// running at once on one connection, and for one key on one process.
	MaxSubscriptionsPerConnection int
	MaxSubscriptionsPerKey        int
	// StatusOf gives the HTTP status of a request refused before GraphQL runs (no key,
	// rate limited) from its contract code: the REST door's table. Nil answers 200.
	StatusOf func(code string) int
	// Authenticators find who a request acts for, in order (package door); nil: API
	// keys, then the console's session cookie.
	Authenticators []door.Authenticator
	// ConsoleOrigins are origins, besides the request's own host, whose pages are the
	// console's (its public URL, behind a proxy that rewrites Host): a session cookie
	// counts on a websocket only from these, and a request from any other site is
	// refused.
	ConsoleOrigins []string
	// SecureCookies marks the session's cookies Secure even on a plain HTTP request (a
	// deployment served over HTTPS by a proxy that does not say so).
	SecureCookies bool
}

// DefaultServerConfig returns the defaults.
func DefaultServerConfig() ServerConfig {
	// 15 levels: graphql-js's standard introspection query (GraphiQL, codegen tools)
	// is that deep; the schema's own types nest 8 at most.
	return ServerConfig{MaxDepth: 15, MaxComplexity: 15000, MaxAliases: 100, MaxTokens: 15000, MaxSelections: 50000,
		MaxResponseBytes: 4 << 20,
		MaxBodyBytes:     1 << 20, RequestTimeout: 30 * time.Second,
		PersistedQueries: 1000, KeepAlive: 15 * time.Second, KeyRecheck: 5 * time.Second, Resync: 15 * time.Second,
		LoaderWait:                    5 * time.Millisecond,
		MaxSubscriptionsPerConnection: 100, MaxSubscriptionsPerKey: 1000}
}

// Validate names the first setting out of range.
func (c ServerConfig) Validate() error {
	switch {
	case c.MaxDepth < 3:
		return errors.New("graph: MaxDepth must be at least 3")
	case c.MaxComplexity < 100:
		return errors.New("graph: MaxComplexity must be at least 100")
	case c.MaxAliases < 0:
		return errors.New("graph: MaxAliases must not be negative")
	case c.MaxTokens < 1000:
		return errors.New("graph: MaxTokens must be at least 1000")
	case c.MaxSelections < 1000:
		return errors.New("graph: MaxSelections must be at least 1000")
	case c.MaxResponseBytes < 1024:
		return errors.New("graph: MaxResponseBytes must be at least 1024")
	case c.MaxBodyBytes < 1024:
		return errors.New("graph: MaxBodyBytes must be at least 1024")
	case c.KeepAlive < time.Second:
		return errors.New("graph: KeepAlive must be at least 1s")
	case c.KeyRecheck < 100*time.Millisecond || c.KeyRecheck > time.Minute:
		return errors.New("graph: KeyRecheck must be between 100ms and 1m")
	case c.Resync < 0:
		return errors.New("graph: Resync must not be negative")
	case c.LoaderWait < 0 || c.LoaderWait > time.Second:
		return errors.New("graph: LoaderWait must be between 0 and 1s")
	case c.MaxSubscriptionsPerConnection < 1 || c.MaxSubscriptionsPerKey < 1:
		return errors.New("graph: the subscription limits must be at least 1")
	}
	return nil
}

// Server is the GraphQL door over the domain services.
type Server struct {
	cfg    ServerConfig
	svc    *domain.Services
	log    *slog.Logger
	gql    *handler.Server
	door   *door.Door
	authed http.Handler // GraphQL behind the door's authentication
	public http.Handler // the fields that sign a person in, without credentials
}

// NewServer builds the door over the services (their rate limits are the REST door's:
// one bucket per key for both); bus feeds the subscriptions (nil: they answer
// not_implemented).
func NewServer(cfg ServerConfig, svc *domain.Services, bus EventStream, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{cfg: cfg, svc: svc, log: log}
	auth := cfg.Authenticators
	if auth == nil {
		auth = []door.Authenticator{door.APIKeys{Keys: svc.Keys}, door.Sessions{People: svc.People, Origins: cfg.ConsoleOrigins}}
	}
	s.door = door.New(door.Config{Limits: svc.RateLimits, Authenticators: auth, SocketsAuthenticateLater: true, Log: log,
		Refuse: func(w http.ResponseWriter, r *http.Request, err error) { s.refuse(w, r, 0, err) }})
	s.authed = s.door.Authenticate(http.HandlerFunc(s.serveAuthenticated))
	s.public = s.door.Public(http.HandlerFunc(s.serveAnonymous))
	live := &liveLimits{perConn: cfg.MaxSubscriptionsPerConnection, perKey: cfg.MaxSubscriptionsPerKey, byKey: map[string]int{}}
	ec := Config{Resolvers: &Resolver{svc: svc, server: s, log: log, bus: bus, live: live, resync: cfg.Resync}}
	es := NewExecutableSchema(ec)
	gql := handler.New(es)
	gql.AddTransport(transport.Websocket{
		Implementation:        newGorillaSockets(),
		InitFunc:              s.initSocket,
		InitTimeout:           10 * time.Second,
		KeepAlivePingInterval: cfg.KeepAlive,
		PingPongInterval:      cfg.KeepAlive,
		MissingPongOk:         true,
	})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	validated := lru.New[*ast.QueryDocument](1000)
	gql.SetQueryCache(validated)
	gql.SetParserTokenLimit(cfg.MaxTokens)
	gql.SetValidationRulesFn(validationRules)
	gql.Use(extension.Introspection{})
	// Before the persisted queries: a query refused is not remembered, and one sent by
	// its hash alone was measured when it was sent whole.
	gql.Use(&documentLimits{maxTokens: cfg.MaxTokens, maxSelections: cfg.MaxSelections, validated: validated})
	gql.Use(extension.AutomaticPersistedQuery{Cache: persistedQueries{lru.New[string](max(cfg.PersistedQueries, 1))}})
	gql.Use(&operationLimits{maxDepth: cfg.MaxDepth, maxComplexity: cfg.MaxComplexity, maxAliases: cfg.MaxAliases,
		costs: newCostModel(es.Schema(), svc.Jobs.Registry)})
	gql.SetErrorPresenter(s.presentError)
	gql.SetRecoverFunc(func(ctx context.Context, v any) error {
		door.Logger(ctx).Error("panic", "value", v, "stack", string(debug.Stack()))
		return s.recoverPanic(ctx, v)
	})
	gql.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		ctx, span := operationSpan(ctx)
		if c := connFrom(ctx); c != nil && principal(ctx) != nil {
			// An operation over a websocket takes its token as a request does.
			if err := s.door.AdmitOperation(ctx); err != nil {
				if span != nil {
					span.End()
				}
				return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{s.presentError(ctx, err)}})
			}
		}
		h := next(ctx)
		if span == nil {
			return h
		}
		// Ended with the operation's first response (a subscription's: once it is set up).
		return func(ctx context.Context) *graphql.Response {
			r := h(ctx)
			span.End()
			return r
		}
	})
	// Loaders live for one response: a subscription's next message reads afresh.
	gql.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		if p := principal(ctx); p != nil {
			ctx = context.WithValue(ctx, ctxLoaders, newLoaders(svc, p, cfg.LoaderWait))
		}
		return next(ctx)
	})
	gql.AroundResponses(s.boundResponse)
	gql.AroundFields(markInternal)
	gql.AroundFields(countBytes)
	s.gql = gql
	return s
}

// Handler serves /graphql (POST and GET, and the websocket). The playground page is
// the console's (package web), mounted beside it by cmd/filemill.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/graphql", s.door.Mount(http.HandlerFunc(s.serveGraphQL)))
	return mux
}

// serveGraphQL checks what GraphQL cannot take, then authenticates the request and takes
// its rate-limit token as every door does (package door). Nothing — not the schema — is
// answered to a request without a valid credential; a websocket may carry its key in
// connection_init instead, authenticated there (initSocket) before any operation runs.
func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		s.refuse(w, r, http.StatusMethodNotAllowed, domain.Errorf(domain.CodeInvalidRequest, "use GET or POST"))
		return
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		s.refuse(w, r, 0, domain.Errorf(domain.CodePayloadTooLarge, "request bodies are limited to %d bytes", s.cfg.MaxBodyBytes))
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	}
	if r.Header.Get("Authorization") == "" && anonymousOnly(r, s.cfg.MaxTokens) {
		// Signing in needs no credential, and a stale session cookie is no obstacle.
		s.public.ServeHTTP(w, r)
		return
	}
	s.authed.ServeHTTP(w, r)
}

// serveAnonymous runs a request that asks only for the fields that sign a person in —
// unless a page of another site sends it, or it carries a key in its query string.
func (s *Server) serveAnonymous(w http.ResponseWriter, r *http.Request) {
	if err := domain.CheckQueryForKey(r.URL.Query().Has); err != nil {
		s.refuse(w, r, 0, err)
		return
	}
	if door.CrossSite(r, s.cfg.ConsoleOrigins) {
		s.refuse(w, r, 0, door.CrossSiteRefused())
		return
	}
	s.serveAuthenticated(w, r)
}

// serveAuthenticated runs an authenticated request (or a websocket that authenticates
// in its first message), a query or mutation within RequestTimeout.
func (s *Server) serveAuthenticated(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") == "" {
		// The resolvers that sign in and out set cookies on the answer.
		ctx := context.WithValue(r.Context(), ctxExchange, &exchange{w: w, r: r})
		if s.cfg.RequestTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
			defer cancel()
		}
		r = r.WithContext(ctx)
	}
	s.gql.ServeHTTP(w, r)
}

// refuse answers a request GraphQL never saw, in the GraphQL response shape.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	gerr := s.presentError(r.Context(), err)
	if derr := domain.AsError(err); derr != nil {
		if derr.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(derr.RetryAfter))
		}
		if status == 0 && s.cfg.StatusOf != nil {
			status = s.cfg.StatusOf(derr.Code)
		}
	}
	if status == 0 {
		status = http.StatusOK
	}
	body, _ := json.Marshal(map[string]any{"errors": []any{gerr}, "data": nil})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// maxPersistedBytes bounds a query remembered by its hash: a longer one is sent whole
// each time, and the cache holds at most PersistedQueries times this.
const maxPersistedBytes = 64 << 10

// persistedQueries remembers the queries of at most maxPersistedBytes.
type persistedQueries struct{ graphql.Cache[string] }

func (p persistedQueries) Add(ctx context.Context, hash, query string) {
	if len(query) <= maxPersistedBytes {
		p.Cache.Add(ctx, hash, query)
	}
}
