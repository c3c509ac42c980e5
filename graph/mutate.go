package graph

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
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
		a, err = r.svc.Do(ctx, p, domain.Call{IdempotencyKey: *key, RequestID: door.RequestID(ctx)}, req)
	}
	if err != nil {
		return nil, err
	}
	if a.Replayed {
		graphql.RegisterExtension(ctx, "idempotentReplayed", true)
	}
	if e := a.Refusal(); e != nil {
		return nil, e
	}
	return a, nil
}

// object is an answer's resource: the view the domain made, as it made it; a stored
// answer given again has only its JSON, the REST representation the GraphQL types are.
func object[V any](a *domain.Answer) (*V, error) {
	switch v := a.Value.(type) {
	case V:
		return &v, nil
	case *V:
		return v, nil
	case nil:
		var stored V
		if err := json.Unmarshal(a.Object, &stored); err != nil {
			return nil, fmt.Errorf("decode %s answer: %w", a.Result, err)
		}
		return &stored, nil
	}
	return nil, fmt.Errorf("a %s answer holds a %T, not a %T", a.Result, a.Value, *new(V))
}

func artifactViews(as []*domain.Artifact) []*domain.ArtifactView {
	out := make([]*domain.ArtifactView, len(as))
	for i, a := range as {
		out[i] = ptr(a.View())
	}
	return out
}
