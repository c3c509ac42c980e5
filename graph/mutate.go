package graph

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"github.com/filemill/filemill/domain"
)

// do makes a mutating request through the domain, as the REST handler of the same
// action does: with an idempotency key, by the idempotency protocol (the key shares
// REST's store: the same key and request through either door replay the same answer);
// without one, run once. A stored refusal given again is the error it was.
func (r *Resolver) do(ctx context.Context, key *string, req domain.Request) (*domain.Answer, error) {
	p := principal(ctx)
	var a *domain.Answer
	var err error
	if key == nil {
		a, err = r.svc.Run(ctx, p, req)
	} else {
		a, err = r.svc.Do(ctx, p, domain.Call{IdempotencyKey: *key, RequestID: requestIDFrom(ctx)}, req)
	}
	if err != nil {
		return nil, err
	}
	if a.Replayed {
		graphql.RegisterExtension(ctx, "idempotentReplayed", true)
	}
	if e := a.Error; e != nil {
		derr := &domain.Error{Code: e.Code, Message: e.Message, Param: e.Param, RetryAfter: e.RetryAfter}
		if len(e.Details) > 0 {
			_ = json.Unmarshal(e.Details, &derr.Details)
		}
		return nil, derr
	}
	return a, nil
}

// object decodes an answer's resource: the REST representation, which the GraphQL
// types are.
func object[V any](a *domain.Answer) (*V, error) {
	var v V
	if err := json.Unmarshal(a.Object, &v); err != nil {
		return nil, fmt.Errorf("decode %s answer: %w", a.Result, err)
	}
	return &v, nil
}

func artifactViews(as []*domain.Artifact) []*domain.ArtifactView {
	out := make([]*domain.ArtifactView, len(as))
	for i, a := range as {
		out[i] = ptr(a.View())
	}
	return out
}
