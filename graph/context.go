package graph

import (
	"context"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

type ctxKey int

const (
	ctxLoaders ctxKey = iota
	ctxBudget
	ctxExchange
)

// principal returns who the request acts for. Every operation runs for one: the door
// refuses a request without it before GraphQL sees it, and a websocket authenticates in
// connection_init before its first operation.
func principal(ctx context.Context) *domain.Principal { return door.Principal(ctx) }
