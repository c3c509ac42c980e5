package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// A response is bounded in bytes: an answer over the bound is replaced by one
// response_too_large error, never cut short. The fields of an answer count their bytes
// as they resolve, so an answer that outgrows the bound stops resolving at once rather
// than after it has been built; the bytes written are checked at the end.

// responseBudget is what one response (a query's, a mutation's, one subscription
// message) may still write.
type responseBudget struct {
	max  int64
	used atomic.Int64
	over atomic.Bool
}

// add counts n bytes and reports whether the budget is spent.
func (b *responseBudget) add(n int64) bool {
	if b.used.Add(n) > b.max {
		b.over.Store(true)
	}
	return b.over.Load()
}

func budgetFrom(ctx context.Context) *responseBudget {
	b, _ := ctx.Value(ctxBudget).(*responseBudget)
	return b
}

// tooLarge is the error of an answer over the bound.
func tooLarge(limit int64, mutation bool) *domain.Error {
	msg := fmt.Sprintf("the response would be larger than %d bytes: ask for fewer fields, fewer aliases or smaller pages", limit)
	if mutation {
		msg += " (the mutations ran; read their results with a query)"
	}
	return &domain.Error{Code: domain.CodeResponseTooLarge, Message: msg, Details: map[string]any{"max_response_bytes": limit}}
}

// errSpent stops a field once the response's budget is spent; its error is dropped
// with the others, as the whole answer is replaced.
var errSpent = &domain.Error{Code: domain.CodeResponseTooLarge, Message: "response too large"}

// boundResponse gives each response its budget and replaces an answer over it.
func (s *Server) boundResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	b := &responseBudget{max: s.cfg.MaxResponseBytes}
	resp := next(context.WithValue(ctx, ctxBudget, b))
	if resp == nil {
		return nil
	}
	size := int64(len(resp.Data))
	if len(resp.Errors) > 0 && !b.over.Load() {
		raw, _ := json.Marshal(resp.Errors)
		size += int64(len(raw))
	}
	if !b.over.Load() && size <= b.max {
		return resp
	}
	mutation := false
	if graphql.HasOperationContext(ctx) {
		if op := graphql.GetOperationContext(ctx).Operation; op != nil {
			mutation = op.Operation == ast.Mutation
		}
	}
	door.Logger(ctx).Info("response too large", "bytes", size, "limit", b.max)
	return &graphql.Response{Errors: gqlerror.List{s.presentError(ctx, tooLarge(b.max, mutation))}, Path: resp.Path,
		Label: resp.Label, HasNext: resp.HasNext, Extensions: resp.Extensions}
}

// countBytes is the field middleware that spends the budget: each field its key and
// its value (an object or list its brackets; their fields count on their own).
// A mutation's own field always runs, so an operation's mutations are never left
// half done by the size of their answers.
func countBytes(ctx context.Context, next graphql.Resolver) (any, error) {
	b := budgetFrom(ctx)
	if b == nil {
		return next(ctx)
	}
	fc := graphql.GetFieldContext(ctx)
	root := fc != nil && fc.Object == "Mutation"
	if b.over.Load() && !root {
		return nil, errSpent
	}
	res, err := next(ctx)
	n := int64(4)
	if fc != nil {
		n += int64(len(fc.Field.Alias))
	}
	if b.add(n+sizeOf(res)) && !root {
		return nil, errSpent
	}
	return res, err
}

// sizeOf estimates the JSON bytes of a resolved value: a leaf's, or an object's or a
// list's brackets and separators.
func sizeOf(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 4
	case string:
		return int64(len(x)) + 2
	case json.RawMessage:
		return int64(len(x))
	case bool:
		return 5
	case time.Time, *time.Time:
		return 32
	}
	return sizeOfValue(reflect.ValueOf(v))
}

func sizeOfValue(rv reflect.Value) int64 {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return 4
		}
		return sizeOfValue(rv.Elem())
	case reflect.String:
		return int64(rv.Len()) + 2
	case reflect.Bool:
		return 5
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			return int64(rv.Len()) // json.RawMessage and the like
		}
		n := int64(2 + rv.Len())
		for i := range rv.Len() {
			n += sizeOfValue(rv.Index(i))
		}
		return n
	case reflect.Map:
		return int64(2 + 16*rv.Len())
	case reflect.Struct:
		if rv.Type() == reflect.TypeFor[time.Time]() {
			return 32
		}
		return 2
	}
	return 8 // numbers
}
