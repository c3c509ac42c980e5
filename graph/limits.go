package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/filemill/filemill/domain"
)

// operationLimits refuses an operation nested deeper or costing more than the limits,
// before anything runs; the error names the limit. Introspection is exempt from the
// depth limit: its standard query is deep by nature, and costs nothing.
type operationLimits struct {
	maxDepth, maxComplexity int
	es                      graphql.ExecutableSchema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = (*operationLimits)(nil)

func (l *operationLimits) ExtensionName() string { return "OperationLimits" }

func (l *operationLimits) Validate(es graphql.ExecutableSchema) error {
	l.es = es
	return nil
}

func (l *operationLimits) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	if d := depth(op.SelectionSet, oc.Doc.Fragments, 0); d > l.maxDepth {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("the query is %d levels deep; the depth limit is %d", d, l.maxDepth),
			Details: map[string]any{"limit": "depth", "depth": d, "max_depth": l.maxDepth}})
	}
	if c := complexity.Calculate(ctx, l.es, op, oc.Variables); c > l.maxComplexity {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("the query's complexity is %d; the complexity limit is %d (a list counts its page size times its fields)", c, l.maxComplexity),
			Details: map[string]any{"limit": "complexity", "complexity": c, "max_complexity": l.maxComplexity}})
	}
	return nil
}

// depth is how deep a selection set nests, fragments included; a fragment spread
// inside itself (refused by validation anyway) ends at the spread.
func depth(set ast.SelectionSet, frags ast.FragmentDefinitionList, seen int) int {
	if seen > 64 {
		return seen
	}
	deepest := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.Name) > 2 && s.Name[:2] == "__" {
				continue // introspection
			}
			d = 1
			if len(s.SelectionSet) > 0 {
				d += depth(s.SelectionSet, frags, seen+1)
			}
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, frags, seen)
		case *ast.FragmentSpread:
			if f := frags.ForName(s.Name); f != nil {
				d = depth(f.SelectionSet, frags, seen+1) // seen grows so a cycle ends
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// setComplexity weighs lists by their page size: a page of 100 jobs costs 100 times
// what one job costs.
func setComplexity(c *ComplexityRoot) {
	page := func(first *int) int {
		if first == nil || *first <= 0 {
			return domain.DefaultPageSize
		}
		return *first
	}
	c.Query.Jobs = func(child int, _, _, _, _ *string, first *int, _ *string) int { return 1 + page(first)*child }
	c.Query.Files = func(child int, _ *string, first *int, _ *string) int { return 1 + page(first)*child }
	c.Query.WebhookEndpoints = func(child int, _ *string, first *int, _ *string) int { return 1 + page(first)*child }
	// A file's history is a read of its own, and long-lived files have many entries.
	c.File.History = func(child int) int { return 10 + 10*child }
	c.File.Artifacts = func(child int) int { return 1 + 5*child }
	c.Job.Artifacts = func(child int) int { return 1 + 5*child }
	c.Job.ArtifactsConnection = func(child int, first *int, _ *string) int { return 1 + page(first)*child }
	c.Batch.Items = func(child int) int { return 1 + domain.MaxBatchSize*child }
}
