package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/filemill/filemill/domain"
)

// validationRules are gqlparser's rules, less the two whose time grew faster than the
// document: validating is work a request makes the server do before any limit of ours
// can refuse it.
func validationRules() *rules.Rules {
	r := rules.NewDefaultRules()
	// It follows fragment spreads under introspection without remembering them: 22 KB
	// of fragments each spreading the next three times ran for minutes. Introspection
	// counts against the depth and complexity limits like any field (cost.go).
	r.RemoveRule(rules.MaxIntrospectionDepth.Name)
	r.ReplaceRule(rules.OverlappingFieldsCanBeMergedRule.Name, fieldsCanMergeRule.RuleFunc)
	return r
}

// documentLimits refuses, before it is validated, a document longer than maxTokens, or
// one whose validation would walk more than maxSelections selections: validation
// walks each operation and each fragment with every fragment it reaches, so a chain of
// fragments, or a few operations spreading a large one, make work that grows as the
// square of the document.
type documentLimits struct {
	maxTokens, maxSelections int
	// validated holds the documents already validated: nothing to measure again.
	validated graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = (*documentLimits)(nil)

func (l *documentLimits) ExtensionName() string { return "DocumentLimits" }

func (l *documentLimits) Validate(graphql.ExecutableSchema) error { return nil }

func (l *documentLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if p.Query == "" {
		return nil
	}
	if _, ok := l.validated.Get(ctx, p.Query); ok {
		return nil
	}
	doc, derr := parseBounded(p.Query, l.maxTokens)
	if derr != nil {
		return requestError(derr)
	}
	if doc == nil {
		return nil // not GraphQL: the parser says why, as it does for any request
	}
	if n := selectionsToValidate(doc, l.maxSelections); n > l.maxSelections {
		return requestError(&domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("validating the document would walk more than %d selections (each operation with every fragment it spreads): send fewer operations or smaller fragments", l.maxSelections),
			Details: map[string]any{"limit": "selections", "max_selections": l.maxSelections}})
	}
	return nil
}

// parseBounded parses a query of at most maxTokens tokens: a longer one is refused
// with an invalid_request error, and one that does not parse gives a nil document.
func parseBounded(query string, maxTokens int) (*ast.QueryDocument, *domain.Error) {
	lx := lexer.New(&ast.Source{Input: query})
	for n := 0; ; n++ {
		tok, err := lx.ReadToken()
		if err != nil {
			return nil, nil
		}
		if tok.Kind == lexer.EOF {
			break
		}
		if n == maxTokens {
			return nil, &domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
				Message: fmt.Sprintf("the query is more than %d tokens long", maxTokens),
				Details: map[string]any{"limit": "tokens", "max_tokens": maxTokens}}
		}
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil, nil
	}
	return doc, nil
}

// selectionsToValidate counts the selections validation walks in doc — each operation,
// then each fragment, with each fragment it reaches once — stopping past limit.
func selectionsToValidate(doc *ast.QueryDocument, limit int) int {
	total := 0
	frags := fragmentsOf(doc.Fragments)
	visit := func(ast.Selection) bool {
		total++
		return total <= limit
	}
	// reached walks root and every fragment it reaches (through fields too), each once.
	reached := func(root ast.SelectionSet) {
		seen := map[string]bool{}
		queue := []ast.SelectionSet{root}
		var walk func(ast.SelectionSet)
		walk = func(set ast.SelectionSet) {
			for _, sel := range set {
				if !visit(sel) {
					return
				}
				switch s := sel.(type) {
				case *ast.Field:
					walk(s.SelectionSet)
				case *ast.InlineFragment:
					walk(s.SelectionSet)
				case *ast.FragmentSpread:
					if f := frags[s.Name]; f != nil && !seen[s.Name] {
						seen[s.Name] = true
						queue = append(queue, f.SelectionSet)
					}
				}
			}
		}
		for len(queue) > 0 && total <= limit {
			set := queue[0]
			queue = queue[1:]
			walk(set)
		}
	}
	for _, op := range doc.Operations {
		if reached(op.SelectionSet); total > limit {
			return total
		}
	}
	for _, f := range doc.Fragments {
		if reached(f.SelectionSet); total > limit {
			return total
		}
	}
	return total
}

// fragments indexes a document's fragments by name (ast's ForName reads the list).
type fragments map[string]*ast.FragmentDefinition

func fragmentsOf(list ast.FragmentDefinitionList) fragments {
	m := make(fragments, len(list))
	for _, f := range list {
		if _, ok := m[f.Name]; !ok {
			m[f.Name] = f
		}
	}
	return m
}
