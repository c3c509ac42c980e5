package rest

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/logging"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxPrincipal
	ctxLogger
)

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(ctxRequestID).(string)
	return id
}

func principalFrom(ctx context.Context) *domain.Principal {
	p, _ := ctx.Value(ctxPrincipal).(*domain.Principal)
	return p
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(ctxLogger).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// withRequestID gives every request a fresh req_ id, echoed in X-Request-Id and in
// every log line of the request.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := domain.NewID(domain.PrefixRequest)
		w.Header().Set("X-Request-Id", id)
		ctx := context.WithValue(r.Context(), ctxRequestID, id)
		ctx = context.WithValue(ctx, ctxLogger, s.log.With("request_id", id))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logger(r.Context()).Error("panic", "value", v, "stack", string(debug.Stack()))
				writeError(w, r, domain.Errorf(domain.CodeInternal, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &logging.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if r.URL.Path == "/healthz" || r.URL.Path == "/metrics" {
			return
		}
		logger(r.Context()).LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", rec.Status),
			slog.Int("bytes", rec.Bytes), slog.Duration("duration", time.Since(start)))
	})
}

func (s *Server) withMetrics(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &logging.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		s.metrics.observe(route, rec.Status, time.Since(start))
	})
}

func (s *Server) withTimeout(next http.Handler) http.Handler {
	if s.cfg.RequestTimeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// withAuth authenticates the bearer key, applies the rate limit (per key, or per client
// address when no key is accepted) and sets the X-RateLimit-* headers on every answer.
// A request that could not be authenticated because a dependency failed (the database
// is down) is no failed authentication: it is answered (503 dependency_unavailable)
// without counting against the address, so clients behind one address are not locked
// out by an outage.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := clientIP(r)
		p, authErr := s.authenticate(r, ip)
		if !s.rateLimit(w, r, s.svc.RateLimits.Charge(r.Context(), p, authErr, ip)) {
			return
		}
		if authErr != nil {
			writeError(w, r, authErr)
			return
		}
		ctx := context.WithValue(r.Context(), ctxPrincipal, p)
		ctx = context.WithValue(ctx, ctxLogger, logger(ctx).With("organization_id", p.Organization.ID, "key_id", p.Key.ID))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *Server) authenticate(r *http.Request, ip netip.Addr) (*domain.Principal, error) {
	if err := domain.CheckQueryForKey(r.URL.Query().Has); err != nil {
		return nil, err
	}
	secret, err := domain.AuthorizationSecret(r.Header.Values("Authorization"))
	if err != nil {
		return nil, err
	}
	return s.svc.Keys.Authenticate(r.Context(), secret, ip)
}

// public applies the per-address rate limit to an unauthenticated /v1 route, so it
// carries the same headers as every other /v1 answer.
func (s *Server) public(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.rateLimit(w, r, s.svc.RateLimits.Allow(r.Context(), nil, clientIP(r))) {
			next.ServeHTTP(w, r)
		}
	})
}

// rateLimit sets the headers of a rate-limit decision and answers 429 when it refused.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, d domain.RateDecision) bool {
	setRateHeaders(w, d)
	if !d.Allowed {
		writeError(w, r, domain.RateLimited(d))
		return false
	}
	return true
}

func setRateHeaders(w http.ResponseWriter, d domain.RateDecision) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(int((d.Reset+time.Second-1)/time.Second)))
}

// clientIP is the peer address (domain.ClientAddr).
func clientIP(r *http.Request) netip.Addr { return domain.ClientAddr(r.RemoteAddr) }
