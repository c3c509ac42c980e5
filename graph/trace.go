package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// operationSpan names the server span of a GraphQL operation by its type and name
// ("graphql mutation CreateJob"), never by its text. An operation over HTTP is its
// request's: the door's span is renamed, and nil returned. An operation over a
// websocket gets a server span of its own, a child of the connection's, which the
// caller ends.
func operationSpan(ctx context.Context) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	oc := graphql.GetOperationContext(ctx)
	name, kind := "graphql", ""
	if oc.Operation != nil {
		kind = string(oc.Operation.Operation)
		name += " " + kind
	}
	if oc.OperationName != "" {
		name += " " + oc.OperationName
	}
	attrs := []attribute.KeyValue{attribute.String("graphql.operation.type", kind),
		attribute.String("graphql.operation.name", oc.OperationName)}
	if connFrom(ctx) == nil {
		span := trace.SpanFromContext(ctx)
		span.SetName(name)
		span.SetAttributes(attrs...)
		return ctx, nil
	}
	attrs = append(attrs, attribute.String("filemill.request_id", door.RequestID(ctx)))
	if p := door.Principal(ctx); p != nil {
		attrs = append(attrs, attribute.String("filemill.organization_id", p.Organization.ID),
			attribute.String("filemill.project_id", p.Key.ProjectID))
	}
	return domain.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}
