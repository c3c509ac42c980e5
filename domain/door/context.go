package door

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/filemill/filemill/domain"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxLogger
	ctxIdentity
	ctxClientAddr
	ctxUpgrade
)

// RequestID is the id Mount gave the request; "" outside one.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxRequestID).(string)
	return id
}

// Logger is the request's logger: with its request id, and the organization and key it
// acts for once authenticated; slog's default outside a request.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(ctxLogger).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// IdentityOf is who the request was authenticated as; nil before, or without, it.
func IdentityOf(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxIdentity).(*Identity)
	return id
}

// Principal is the principal the request acts for; nil when it was not authenticated.
func Principal(ctx context.Context) *domain.Principal {
	if id := IdentityOf(ctx); id != nil {
		return id.Principal
	}
	return nil
}

// ClientAddr is the address of the request's peer (domain.ClientAddr), as the door
// judged it.
func ClientAddr(ctx context.Context) netip.Addr {
	a, _ := ctx.Value(ctxClientAddr).(netip.Addr)
	return a
}

func withIdentity(ctx context.Context, id *Identity) context.Context {
	ctx = context.WithValue(ctx, ctxIdentity, id)
	p := id.Principal
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("filemill.organization_id", p.Organization.ID),
			attribute.String("filemill.project_id", p.Key.ProjectID), attribute.String("filemill.environment", string(p.Environment())))
	}
	log := Logger(ctx).With("organization_id", p.Organization.ID)
	if p.Session != nil {
		log = log.With("user_id", p.User.ID, "session_id", p.Session.ID)
	} else {
		log = log.With("key_id", p.Key.ID)
	}
	return context.WithValue(ctx, ctxLogger, log)
}

// upgradeOf is the upgrade request of a websocket that authenticates in its first
// message; nil otherwise.
func upgradeOf(ctx context.Context) *http.Request {
	r, _ := ctx.Value(ctxUpgrade).(*http.Request)
	return r
}
