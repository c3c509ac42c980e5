package graph

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/filemill/filemill/domain"
)

// CostUnitBytes is how many bytes of answer a unit of cost stands for.
const CostUnitBytes = costUnitBytes

// Measure is what the limits see of an operation: its cost, depth and aliases.
type Measure struct{ Cost, Depth, Aliases int }

// costModels holds the model Analyse built for each registry, as a server holds its
// own: building one reads every operation's options schema, most of the work of
// measuring a small query.
var costModels sync.Map // *domain.Registry to *costModel

// Analyse validates query (its first operation, or the one named) against the schema
// and measures it as the limits do (a document the server refuses before validating
// it gives the *domain.Error the server answers), with reg as the catalog and vars as the variables
// (JSON-like values, not checked against their definitions).
func Analyse(reg *domain.Registry, query, operation string, vars map[string]any) (Measure, error) {
	schema := NewExecutableSchema(Config{}).Schema()
	cfg := DefaultServerConfig()
	doc, derr := parseBounded(query, cfg.MaxTokens)
	if derr != nil {
		return Measure{}, derr
	}
	if doc == nil {
		_, err := parser.ParseQuery(&ast.Source{Input: query})
		return Measure{}, err
	}
	if n := selectionsToValidate(doc, cfg.MaxSelections); n > cfg.MaxSelections {
		return Measure{}, &domain.Error{Code: domain.CodeInvalidRequest, Param: "query",
			Message: fmt.Sprintf("more than %d selections to validate", cfg.MaxSelections),
			Details: map[string]any{"limit": "selections"}}
	}
	if errs := validator.ValidateWithRules(schema, doc, validationRules()); len(errs) > 0 {
		return Measure{}, errs
	}
	op := doc.Operations.ForName(operation)
	sh := (&shaper{frags: fragmentsOf(doc.Fragments), memo: map[string]shape{}}).set(op.SelectionSet)
	m, ok := costModels.Load(reg)
	if !ok {
		m, _ = costModels.LoadOrStore(reg, newCostModel(schema, reg))
	}
	c, _ := m.(*costModel).operationCost(op, doc.Fragments, vars)
	return Measure{Cost: c, Depth: sh.depth, Aliases: sh.aliases}, nil
}

// UnboundedLists names the list fields of the schema (introspection aside) that the
// cost model has no bound for: each would count as one item.
func UnboundedLists(reg *domain.Registry) []string {
	schema := NewExecutableSchema(Config{}).Schema()
	m := newCostModel(schema, reg)
	var out []string
	for name, def := range schema.Types {
		if strings.HasPrefix(name, "__") || def.Kind != ast.Object {
			continue
		}
		for _, f := range def.Fields {
			if f.Type.Elem == nil && !strings.HasSuffix(f.Type.Name(), "Connection") {
				continue
			}
			if _, ok := m.lists[name+"."+f.Name]; !ok {
				out = append(out, name+"."+f.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
