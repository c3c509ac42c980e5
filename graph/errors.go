package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// internalError marks what a resolver or the service below it failed with that carries
// no contract code: logged with the request id, shown as "internal error".
type internalError struct{ err error }

func (e internalError) Error() string { return e.err.Error() }
func (e internalError) Unwrap() error { return e.err }

// markInternal is the field middleware that tells a resolver's own failures from the
// errors of the request (syntax, validation, argument values), which all carry a
// gqlerror without a contract code.
func markInternal(ctx context.Context, next graphql.Resolver) (any, error) {
	res, err := next(ctx)
	if err != nil && domain.AsError(err) == nil && !errors.Is(err, domain.ErrNotFound) {
		var gerr *gqlerror.Error
		if !errors.As(err, &gerr) {
			err = internalError{err}
		}
	}
	return res, err
}

// protocolCodes are gqlgen's codes that clients act on and keep: a client sends the
// full query after PERSISTED_QUERY_NOT_FOUND.
var protocolCodes = map[string]bool{"PERSISTED_QUERY_NOT_FOUND": true, "PERSISTED_QUERY_NOT_SUPPORTED": true}

// presentError is the one error presenter: every error of a response carries the REST
// code in extensions.code, with param, details and the request id.
func (s *Server) presentError(ctx context.Context, err error) *gqlerror.Error {
	if b := budgetFrom(ctx); b != nil && b.over.Load() {
		return nil // the answer is replaced by response_too_large: its errors go with it
	}
	gerr := graphql.DefaultErrorPresenter(ctx, err)
	out := &gqlerror.Error{Message: gerr.Message, Path: gerr.Path, Locations: gerr.Locations, Rule: gerr.Rule}
	derr := domain.AsError(err)
	var ierr internalError
	switch {
	case derr != nil:
	case errors.As(err, &ierr):
		door.Logger(ctx).Error("internal error", "error", err.Error(), "path", gerr.Path.String())
		derr = &domain.Error{Code: domain.CodeInternal, Message: "internal error"}
	case errors.Is(err, domain.ErrNotFound):
		derr = domain.NotFound("resource")
	default:
		if code, _ := gerr.Extensions["code"].(string); protocolCodes[code] {
			out.Extensions = map[string]any{"code": code, "requestId": door.RequestID(ctx)}
			return out
		}
		// Syntax, validation and argument values: the request's fault.
		derr = &domain.Error{Code: domain.CodeInvalidRequest, Message: gerr.Message}
	}
	out.Message = derr.Message
	out.Extensions = map[string]any{"code": derr.Code, "requestId": door.RequestID(ctx)}
	if derr.Param != "" {
		out.Extensions["param"] = camelParam(derr.Param)
	}
	if len(derr.Details) > 0 {
		out.Extensions["details"] = derr.Details
	}
	if derr.RetryAfter > 0 {
		out.Extensions["retryAfter"] = derr.RetryAfter
	}
	return out
}

// recoverPanic turns a panic in a resolver into an internal error.
func (s *Server) recoverPanic(ctx context.Context, v any) error {
	return internalError{fmt.Errorf("panic: %v", v)}
}

// requestError wraps a domain error for the places gqlgen wants a *gqlerror.Error
// (operation checks), keeping the code for the presenter.
func requestError(derr *domain.Error) *gqlerror.Error {
	return &gqlerror.Error{Message: derr.Message, Err: derr}
}

// camelParam names a REST parameter as GraphQL spells its argument: byte_size is
// byteSize, validation.max_bytes is validation.maxBytes, Idempotency-Key is
// idempotencyKey.
func camelParam(p string) string {
	if p == "Idempotency-Key" {
		return "idempotencyKey"
	}
	var b strings.Builder
	upper := false
	for _, r := range p {
		switch {
		case r == '_':
			upper = true
		case upper:
			b.WriteRune(unicode.ToUpper(r))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
