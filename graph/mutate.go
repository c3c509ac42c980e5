package graph

import (
	"context"

	"github.com/filemill/filemill/domain"
)

// begin starts a mutation. An idempotency key is to share REST's store, through the
// domain's idempotency protocol.
func begin(_ context.Context, key *string) error {
	if key != nil {
		return &domain.Error{Code: domain.CodeNotImplemented, Param: "idempotencyKey",
			Message: "idempotencyKey is not available through GraphQL on this deployment yet; send the mutation without it"}
	}
	return nil
}

func artifactViews(as []*domain.Artifact) []*domain.ArtifactView {
	out := make([]*domain.ArtifactView, len(as))
	for i, a := range as {
		out[i] = ptr(a.View())
	}
	return out
}
