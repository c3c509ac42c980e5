package rest

import (
	"context"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
	"github.com/filemill/filemill/domain/logging"
)

// The REST door's own layers; the request id, access log, authentication and rate limit
// are the shared door plumbing (package door).

func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				door.Logger(r.Context()).Error("panic", "value", v, "stack", string(debug.Stack()))
				writeError(w, r, domain.Errorf(domain.CodeInternal, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) withMetrics(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		door.SetRoute(r.Context(), route)
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
