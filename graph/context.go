package graph

import (
	"context"
	"log/slog"

	"github.com/filemill/filemill/domain"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxPrincipal
	ctxLoaders
	ctxClientAddr
	ctxSecret
)

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(ctxRequestID).(string)
	return id
}

// principal returns the key the request authenticated with. Every operation runs for
// one: the handler refuses a request without it before GraphQL sees it.
func principal(ctx context.Context) *domain.Principal {
	p, _ := ctx.Value(ctxPrincipal).(*domain.Principal)
	return p
}

func withPrincipal(ctx context.Context, p *domain.Principal) context.Context {
	return context.WithValue(ctx, ctxPrincipal, p)
}

func (s *Server) logger(ctx context.Context) *slog.Logger {
	l := s.log
	if id := requestIDFrom(ctx); id != "" {
		l = l.With("request_id", id)
	}
	if p := principal(ctx); p != nil {
		l = l.With("organization_id", p.Organization.ID, "key_id", p.Key.ID)
	}
	return l
}
