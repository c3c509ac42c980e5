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
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/filemill/filemill/domain"
)

// ServerConfig holds the settings of the GraphQL door (Config is gqlgen's, of the
// executable schema).
type ServerConfig struct {
	// MaxDepth and MaxComplexity bound an operation before it runs.
	MaxDepth      int
	MaxComplexity int
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// RequestTimeout bounds a query or mutation.
	RequestTimeout time.Duration
	// PersistedQueries is how many automatic persisted queries one process remembers.
	PersistedQueries int
	// StatusOf gives the HTTP status of a request refused before GraphQL runs (no key,
	// rate limited) from its contract code: the REST door's table. Nil answers 200.
	StatusOf func(code string) int
}

// DefaultServerConfig returns the defaults.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{MaxDepth: 12, MaxComplexity: 15000, MaxBodyBytes: 1 << 20, RequestTimeout: 30 * time.Second,
		PersistedQueries: 1000}
}

// Validate names the first setting out of range.
func (c ServerConfig) Validate() error {
	switch {
	case c.MaxDepth < 3:
		return errors.New("graph: MaxDepth must be at least 3")
	case c.MaxComplexity < 100:
		return errors.New("graph: MaxComplexity must be at least 100")
	case c.MaxBodyBytes < 1024:
		return errors.New("graph: MaxBodyBytes must be at least 1024")
	}
	return nil
}

// Server is the GraphQL door over the domain services.
type Server struct {
	cfg     ServerConfig
	svc     *domain.Services
	limiter domain.RateLimiter
	log     *slog.Logger
	gql     *handler.Server
}

// NewServer builds the door. limiter is the one the REST door uses (shared buckets).
func NewServer(cfg ServerConfig, svc *domain.Services, limiter domain.RateLimiter, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{cfg: cfg, svc: svc, limiter: limiter, log: log}
	ec := Config{Resolvers: &Resolver{svc: svc, log: log}}
	setComplexity(&ec.Complexity)
	gql := handler.New(NewExecutableSchema(ec))
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	gql.Use(extension.Introspection{})
	gql.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](max(cfg.PersistedQueries, 1))})
	gql.Use(&operationLimits{maxDepth: cfg.MaxDepth, maxComplexity: cfg.MaxComplexity})
	gql.SetErrorPresenter(s.presentError)
	gql.SetRecoverFunc(func(ctx context.Context, v any) error {
		s.logger(ctx).Error("panic", "value", v, "stack", string(debug.Stack()))
		return s.recoverPanic(ctx, v)
	})
	gql.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		if p := principal(ctx); p != nil && loadersFrom(ctx) == nil {
			ctx = context.WithValue(ctx, ctxLoaders, newLoaders(svc, p))
		}
		return next(ctx)
	})
	gql.AroundFields(markInternal)
	s.gql = gql
	return s
}

// Handler serves /graphql (POST and GET) and the playground at /graphql/play.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/graphql", s.withRequestID(http.HandlerFunc(s.serveGraphQL)))
	mux.Handle("GET /graphql/play", playground.Handler("filemill GraphQL", "/graphql"))
	return mux
}

func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := domain.NewID(domain.PrefixRequest)
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxRequestID, id)))
	})
}

// serveGraphQL authenticates the request and takes its rate-limit token as the REST
// door does (domain rules), then hands it to GraphQL. Nothing — not the schema — is
// answered to a request without a valid key.
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
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	ip := domain.ClientAddr(r.RemoteAddr)
	p, authErr := s.authenticate(r)
	var rp *domain.Principal
	if authErr == nil {
		rp = p
	}
	bucket, limit := s.svc.Config.RateBucket(rp, ip)
	if err := s.rateLimit(w, r, bucket, limit); err != nil {
		s.refuse(w, r, 0, err)
		return
	}
	if authErr != nil {
		s.refuse(w, r, 0, authErr)
		return
	}
	ctx := withPrincipal(r.Context(), p)
	if s.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
	}
	s.gql.ServeHTTP(w, r.WithContext(ctx))
}

// authenticate finds the key of a request: the Authorization header, never the query
// string. Codes: those of domain.Keys.Authenticate, api_key_in_query.
func (s *Server) authenticate(r *http.Request) (*domain.Principal, error) {
	if err := domain.CheckQueryForKey(r.URL.Query().Has); err != nil {
		return nil, err
	}
	secret, err := domain.BearerSecret(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	return s.svc.Keys.Authenticate(r.Context(), secret, domain.ClientAddr(r.RemoteAddr))
}

// rateLimit takes one token and sets the X-RateLimit-* headers; a limiter that fails
// lets the request through (availability over strictness), as REST does.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, bucket string, limit int) error {
	if s.limiter == nil {
		return nil
	}
	d, err := s.limiter.Allow(r.Context(), bucket, limit)
	if err != nil {
		s.logger(r.Context()).Warn("rate limiter unavailable; letting the request through", "error", err.Error())
		return nil
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(int((d.Reset+time.Second-1)/time.Second)))
	if !d.Allowed {
		return domain.RateLimited(d)
	}
	return nil
}

// refuse answers a request GraphQL never saw, in the GraphQL response shape.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	gerr := s.presentError(context.WithValue(r.Context(), ctxRequestID, requestIDFrom(r.Context())), err)
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
