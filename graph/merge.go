package graph

import (
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// fieldsCanMergeRule checks what gqlparser's OverlappingFieldsCanBeMerged checks (the
// specification's FieldsInSetCanMerge: fields answered under one name must be one
// field with one set of arguments, of one shape), in time near-linear in the document.
// gqlparser's compares every pair of same-named fields, again for every nesting
// inline fragment: 5,000 `__typename` took 3 s, 300 nested inline fragments 1.5 s and
// a thousand of them 43 s, all before any limit of ours could refuse them.
//
// This one splits the check in two, each an equivalence within a group of fields of
// one response name, so that each field is compared with its group's first: the same
// shape (for every pair), and the same field and arguments (for the pairs that can meet
// in one answer: same parent type, or an interface or union). Then it checks the merged
// sub-selections of each group once. A fragment is collected once per selection it is
// spread into, as execution collects it. The work is bounded: a document that would
// take more than maxMergeSteps is refused. It finds conflicts gqlparser's misses (its
// tests hold it to the specification's pairwise rule).
var fieldsCanMergeRule = core.Rule{Name: "OverlappingFieldsCanBeMerged", RuleFunc: func(obs *core.Events, addError core.AddErrFunc) {
	var frags fragments // of the document, indexed once
	obs.OnOperation(func(w *core.Walker, op *ast.OperationDefinition) {
		if frags == nil {
			frags = fragmentsOf(w.Document.Fragments)
		}
		m := &merger{walker: w, frags: frags, report: addError}
		fields := m.collect(nil, op.SelectionSet)
		m.sameShape(nil, fields)
		m.sameForCommonParents(nil, fields)
		if m.steps > maxMergeSteps {
			addError(core.Message("The operation's selections are too many to check that they merge: ask for fewer fields, fragments or aliases"),
				core.At(op.Position))
		}
	})
}}

// maxMergeSteps bounds the fields one operation's merge check collects: past it, the
// answer would be past any complexity limit anyway.
const maxMergeSteps = 200_000

// maxMergeErrors bounds the conflicts one operation reports.
const maxMergeErrors = 20

type merger struct {
	walker *core.Walker
	frags  fragments
	report core.AddErrFunc
	steps  int
	errors int
}

// mergeGroup is the fields answered under one response name, in document order.
type mergeGroup struct {
	name   string
	fields []*ast.Field
}

func (m *merger) over() bool { return m.steps > maxMergeSteps || m.errors >= maxMergeErrors }

// collect gathers the fields of sets, inline fragments and spread fragments included
// (each fragment once), grouped by response name.
func (m *merger) collect(fields []*ast.Field, sets ...ast.SelectionSet) []mergeGroup {
	var groups []mergeGroup
	index := map[string]int{}
	visited := map[string]bool{}
	var walk func(ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, sel := range set {
			if m.steps++; m.steps > maxMergeSteps {
				return
			}
			switch s := sel.(type) {
			case *ast.Field:
				if s.ObjectDefinition == nil {
					continue // on an unknown type: other rules say so
				}
				name := s.Alias
				if name == "" {
					name = s.Name
				}
				i, ok := index[name]
				if !ok {
					i = len(groups)
					index[name] = i
					groups = append(groups, mergeGroup{name: name})
				}
				groups[i].fields = append(groups[i].fields, s)
			case *ast.InlineFragment:
				walk(s.SelectionSet)
			case *ast.FragmentSpread:
				if visited[s.Name] {
					continue
				}
				visited[s.Name] = true
				if def := m.frags[s.Name]; def != nil {
					walk(def.SelectionSet)
				}
			}
		}
	}
	for _, f := range fields {
		walk(f.SelectionSet)
	}
	for _, set := range sets {
		walk(set)
	}
	return groups
}

// sameShape requires the fields of each group to answer values of one shape: the same
// lists and non-nulls around the same scalar or enum (or any object), at every depth.
func (m *merger) sameShape(path []string, groups []mergeGroup) {
	for _, g := range groups {
		if m.over() {
			return
		}
		var first, leaf *ast.Field
		for _, f := range g.fields {
			if f.Definition == nil {
				continue
			}
			if first == nil {
				first = f
			} else if shapeOf(first.Definition.Type) != shapeOf(f.Definition.Type) {
				m.conflict(append(path, g.name), f, fmt.Sprintf("they return conflicting types %q and %q",
					first.Definition.Type.String(), f.Definition.Type.String()))
				break
			}
			if m.isLeaf(f.Definition.Type) {
				if leaf != nil && leaf.Definition.Type.Name() != f.Definition.Type.Name() {
					m.conflict(append(path, g.name), f, fmt.Sprintf("they return conflicting types %q and %q",
						leaf.Definition.Type.String(), f.Definition.Type.String()))
					break
				}
				leaf = f
			}
		}
		m.sameShape(append(path, g.name), m.collect(g.fields))
	}
}

// sameForCommonParents requires the fields of each group that could both be answered
// for one object — their parent types are the same, or one is an interface or union —
// to be one field with one set of arguments, and their merged selections to merge.
// Fields of two different object types never meet in one answer.
func (m *merger) sameForCommonParents(path []string, groups []mergeGroup) {
groups:
	for _, g := range groups {
		if m.over() {
			return
		}
		for _, part := range commonParents(g.fields) {
			first := part[0]
			for _, f := range part[1:] {
				if f.Name != first.Name {
					m.conflict(append(path, g.name), f, fmt.Sprintf("%q and %q are different fields", first.Name, f.Name))
					continue groups
				}
				if !sameArguments(first.Arguments, f.Arguments) {
					m.conflict(append(path, g.name), f, "they have differing arguments")
					continue groups
				}
			}
			m.sameForCommonParents(append(path, g.name), m.collect(part))
		}
	}
}

// commonParents splits fields into the parts whose every pair may meet in one answer:
// per object type, its fields with those on an interface, a union or an unknown type.
func commonParents(fields []*ast.Field) [][]*ast.Field {
	var abstract []*ast.Field
	var order []string
	concrete := map[string][]*ast.Field{}
	for _, f := range fields {
		if f.Definition == nil || f.ObjectDefinition.Kind != ast.Object {
			abstract = append(abstract, f)
			continue
		}
		name := f.ObjectDefinition.Name
		if _, ok := concrete[name]; !ok {
			order = append(order, name)
		}
		concrete[name] = append(concrete[name], f)
	}
	if len(order) == 0 {
		return [][]*ast.Field{abstract}
	}
	parts := make([][]*ast.Field, 0, len(order))
	for _, name := range order {
		parts = append(parts, append(append([]*ast.Field(nil), abstract...), concrete[name]...))
	}
	return parts
}

// shapeOf spells a type's lists and non-nulls, not its name: "[!n?" for [T]!.
func shapeOf(t *ast.Type) string {
	var b strings.Builder
	for ; t != nil; t = t.Elem {
		if t.Elem != nil {
			b.WriteByte('[')
		} else {
			b.WriteByte('n')
		}
		if t.NonNull {
			b.WriteByte('!')
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

func (m *merger) isLeaf(t *ast.Type) bool {
	def := m.walker.Schema.Types[t.Name()]
	return def != nil && (def.Kind == ast.Scalar || def.Kind == ast.Enum)
}

// sameArguments: the same names with the same literal values, in any order.
func sameArguments(a, b ast.ArgumentList) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		y := b.ForName(x.Name)
		if y == nil || x.Value.Kind != y.Value.Kind || x.Value.String() != y.Value.String() {
			return false
		}
	}
	return true
}

// conflict reports that the fields answered at path do not merge, as gqlparser words
// it: the outer names, then the reason.
func (m *merger) conflict(path []string, at *ast.Field, reason string) {
	m.errors++
	var b strings.Builder
	for _, name := range path[1:] {
		fmt.Fprintf(&b, "subfields %q conflict because ", name)
	}
	b.WriteString(reason)
	m.report(core.Message(`Fields "%s" conflict because %s. Use different aliases on the fields to fetch both if this was intentional.`,
		path[0], b.String()), core.At(at.Position))
}
