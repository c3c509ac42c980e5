package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/filemill/filemill/domain"
)

// operationLimits refuses, before anything runs, an operation nested deeper, writing
// more aliases or costing more than the limits; the error names the limit.
// Introspection counts like any field: it is the same work and the same bytes.
type operationLimits struct {
	maxDepth, maxComplexity, maxAliases int
	costs                               *costModel
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = (*operationLimits)(nil)

func (l *operationLimits) ExtensionName() string { return "OperationLimits" }

func (l *operationLimits) Validate(graphql.ExecutableSchema) error { return nil }

func (l *operationLimits) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	sh := (&shaper{frags: fragmentsOf(oc.Doc.Fragments), memo: map[string]shape{}}).set(op.SelectionSet)
	if sh.deferred {
		// Over HTTP only the first part of a deferred answer would ever be sent.
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: "@defer is not supported: ask for the fields in one operation"})
	}
	if sh.depth > l.maxDepth {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("the query is %d levels deep; the depth limit is %d", sh.depth, l.maxDepth),
			Details: map[string]any{"limit": "depth", "depth": sh.depth, "max_depth": l.maxDepth}})
	}
	if sh.aliases > l.maxAliases {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("the query writes %d aliases (fragments counted where they are spread); the alias limit is %d", sh.aliases, l.maxAliases),
			Details: map[string]any{"limit": "aliases", "aliases": sh.aliases, "max_aliases": l.maxAliases}})
	}
	c, tooLong := l.costs.operationCost(op, oc.Doc.Fragments, oc.Variables)
	if tooLong {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("the query's complexity is over the limit of %d", l.maxComplexity),
			Details: map[string]any{"limit": "complexity", "max_complexity": l.maxComplexity}})
	}
	if c > l.maxComplexity {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("the query's complexity is %d; the complexity limit is %d (a list counts the most items it can hold, or its page size, times its fields; introspection counts the schema it describes)", c, l.maxComplexity),
			Details: map[string]any{"limit": "complexity", "complexity": c, "max_complexity": l.maxComplexity}})
	}
	return nil
}

// shape is what the limits read from a document alone: how deep a selection nests,
// how many aliases it writes with its fragments spread out, whether it defers.
type shape struct {
	depth, aliases int
	deferred       bool
}

// shaper measures selections: a fragment once where it is collected, however often it
// is spread there (its aliases are answered once), and measured once.
type shaper struct {
	frags fragments
	memo  map[string]shape
}

func (s *shaper) set(set ast.SelectionSet) shape {
	out := s.direct(set)
	spreads := collectSpreads(set, s.frags, func(sel ast.Selection) bool {
		if sp, ok := sel.(*ast.FragmentSpread); ok && sp.Directives.ForName("defer") != nil {
			out.deferred = true
		}
		return true
	})
	for _, name := range spreads {
		m, ok := s.memo[name]
		if !ok {
			s.memo[name] = shape{} // a cycle (refused by validation) ends here
			if f := s.frags[name]; f != nil {
				m = s.direct(f.SelectionSet)
			}
			s.memo[name] = m
		}
		out = out.and(m)
	}
	return out
}

// direct measures the fields of set and of its inline fragments.
func (s *shaper) direct(set ast.SelectionSet) shape {
	var out shape
	for _, sel := range set {
		var d shape
		switch x := sel.(type) {
		case *ast.Field:
			d = s.set(x.SelectionSet)
			d.depth++
			if x.Alias != "" && x.Alias != x.Name {
				d.aliases = satAdd(d.aliases, 1)
			}
		case *ast.InlineFragment:
			d = s.direct(x.SelectionSet)
			d.deferred = d.deferred || x.Directives.ForName("defer") != nil
		}
		out = out.and(d)
	}
	return out
}

// and is the shape of two selections answered side by side.
func (a shape) and(b shape) shape {
	return shape{depth: max(a.depth, b.depth), aliases: satAdd(a.aliases, b.aliases), deferred: a.deferred || b.deferred}
}
