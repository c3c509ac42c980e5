package graph

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

// FuzzFieldsMergeAsTheSpecSays: on any small document of filemill's schema, or of a
// schema with interfaces and unions (filemill's has none) — fields under colliding
// aliases, with or without arguments, in inline and named fragments, at several
// depths — fieldsCanMergeRule finds a conflict exactly when the specification's
// FieldsInSetCanMerge, written out pair by pair (specMerges), does; and whenever
// gqlparser's OverlappingFieldsCanBeMerged finds one. gqlparser's misses some: a field
// spread through two fragments with other arguments than the same field written beside
// them. The documents are small: both of the others take time that grows with the
// square of same-named fields, or faster, which is why the rule is replaced.
func FuzzFieldsMergeAsTheSpecSays(f *testing.F) {
	schemas := mergeSchemas()
	for _, seed := range []string{"", "\x01\x02\x03", "aliases\x00\x00\x05\x05", "fragments\x09\x09\x09\x04\x04", "\x01abstract\x09\x07\x07"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		schema := schemas[0]
		if len(in) > 0 {
			schema, in = schemas[int(in[0])%len(schemas)], in[1:]
		}
		doc := (&mergeGen{in: in, schema: schema}).document()
		checkMergeVerdicts(t, schema, doc)
	})
}

// TestFieldsMergeAsTheSpecSays runs the comparison on random documents: many more
// than the fuzz seeds, each run.
func TestFieldsMergeAsTheSpecSays(t *testing.T) {
	for i, schema := range mergeSchemas() {
		r := rand.New(rand.NewPCG(1, uint64(i)))
		conflicts := 0
		for range 5000 {
			in := make([]byte, 64)
			for i := range in {
				in[i] = byte(r.UintN(256))
			}
			doc := (&mergeGen{in: in, schema: schema}).document()
			if checkMergeVerdicts(t, schema, doc) {
				conflicts++
			}
		}
		// The generator makes both kinds: a test of documents that never conflict
		// could not fail.
		require.Greater(t, conflicts, 500)
		require.Less(t, conflicts, 4500)
	}
}

// mergeSchemas are filemill's schema and one with interfaces and unions, whose types
// answer one field name with different types.
func mergeSchemas() []*ast.Schema {
	abstract := gqlparser.MustLoadSchema(&ast.Source{Name: "abstract.graphqls", Input: `
type Query { node(id: ID): Node nodes(first: Int): [Node] search(q: String): [Result] a: A b: B }
interface Node { id: ID! name(upper: Boolean): String child: Node }
type A implements Node { id: ID! name(upper: Boolean): String child: Node size: Int tags: [String] other: B }
type B implements Node { id: ID! name(upper: Boolean): String child: Node size: String count: Int! other: A }
union Result = A | B
`})
	return []*ast.Schema{NewExecutableSchema(Config{}).Schema(), abstract}
}

// checkMergeVerdicts requires fieldsCanMergeRule to find a conflict in doc exactly
// when specMerges does, and whenever gqlparser's rule does; it returns whether there
// is one.
func checkMergeVerdicts(t *testing.T, schema *ast.Schema, doc string) bool {
	q, err := parser.ParseQuery(&ast.Source{Input: doc})
	require.NoError(t, err, doc)
	verdict := func(r core.Rule) string {
		if errs := validator.ValidateWithRules(schema, q, rules.NewRules(r)); len(errs) > 0 {
			return errs.Error()
		}
		return ""
	}
	stock, ours := verdict(rules.OverlappingFieldsCanBeMergedRule), verdict(fieldsCanMergeRule)
	spec := specMerges(schema, q) // after validation has set each field's definitions
	require.Equal(t, spec, ours == "", "%s\nours: %s", doc, ours)
	if stock != "" {
		require.NotEmpty(t, ours, "%s\ngqlparser: %s", doc, stock)
	}
	return ours != ""
}

// specMerges is the specification's FieldsInSetCanMerge, on every selection set of the
// document, pair by pair: slow and plain, the reference for the rule.
func specMerges(schema *ast.Schema, doc *ast.QueryDocument) bool {
	frags := fragmentsOf(doc.Fragments)
	var collect func(sets ...ast.SelectionSet) []*ast.Field
	collect = func(sets ...ast.SelectionSet) []*ast.Field {
		var out []*ast.Field
		for _, set := range sets {
			for _, sel := range set {
				switch s := sel.(type) {
				case *ast.Field:
					if s.ObjectDefinition != nil {
						out = append(out, s)
					}
				case *ast.InlineFragment:
					out = append(out, collect(s.SelectionSet)...)
				case *ast.FragmentSpread:
					if f := frags[s.Name]; f != nil {
						out = append(out, collect(f.SelectionSet)...)
					}
				}
			}
		}
		return out
	}
	key := func(f *ast.Field) string {
		if f.Alias != "" {
			return f.Alias
		}
		return f.Name
	}
	leaf := func(name string) bool {
		d := schema.Types[name]
		return d != nil && (d.Kind == ast.Scalar || d.Kind == ast.Enum)
	}
	var sameShape func(a, b *ast.Field) bool
	sameShape = func(a, b *ast.Field) bool {
		if a.Definition != nil && b.Definition != nil {
			ta, tb := a.Definition.Type, b.Definition.Type
			for {
				if ta.NonNull != tb.NonNull || (ta.Elem == nil) != (tb.Elem == nil) {
					return false
				}
				if ta.Elem == nil {
					break
				}
				ta, tb = ta.Elem, tb.Elem
			}
			// Two scalars or enums must be the same one.
			if leaf(ta.NamedType) && leaf(tb.NamedType) && ta.NamedType != tb.NamedType {
				return false
			}
		}
		sub := collect(a.SelectionSet, b.SelectionSet)
		for i, x := range sub {
			for _, y := range sub[i+1:] {
				if key(x) == key(y) && !sameShape(x, y) {
					return false
				}
			}
		}
		return true
	}
	var canMerge func(fields []*ast.Field) bool
	canMerge = func(fields []*ast.Field) bool {
		for i, a := range fields {
			for _, b := range fields[i+1:] {
				if key(a) != key(b) {
					continue
				}
				if !sameShape(a, b) {
					return false
				}
				common := a.Definition == nil || b.Definition == nil || a.ObjectDefinition.Name == b.ObjectDefinition.Name ||
					a.ObjectDefinition.Kind != ast.Object || b.ObjectDefinition.Kind != ast.Object
				if !common {
					continue
				}
				if a.Name != b.Name || !sameArguments(a.Arguments, b.Arguments) ||
					!canMerge(collect(a.SelectionSet, b.SelectionSet)) {
					return false
				}
			}
		}
		return true
	}
	ok := true
	var every func(set ast.SelectionSet)
	every = func(set ast.SelectionSet) {
		ok = ok && canMerge(collect(set))
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				every(s.SelectionSet)
			case *ast.InlineFragment:
				every(s.SelectionSet)
			}
		}
	}
	for _, op := range doc.Operations {
		every(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		every(f.SelectionSet)
	}
	return ok
}

// mergeGen makes a document from bytes: each byte picks the next choice.
type mergeGen struct {
	in     []byte
	schema *ast.Schema
	frags  []genFrag
	made   int // fragments made or being made
	fields int
}

type genFrag struct{ name, on, text string }

func (g *mergeGen) pick(n int) int {
	if n <= 1 || len(g.in) == 0 {
		return 0
	}
	b := g.in[0]
	g.in = g.in[1:]
	return int(b) % n
}

func (g *mergeGen) document() string {
	sel := g.selection(g.schema.Query, 3)
	var b strings.Builder
	fmt.Fprintf(&b, "query %s\n", sel)
	for _, f := range g.frags {
		fmt.Fprintf(&b, "fragment %s on %s %s\n", f.name, f.on, f.text)
	}
	return b.String()
}

// selection is a selection set on def, at most depth fields deep.
func (g *mergeGen) selection(def *ast.Definition, depth int) string {
	var parts []string
	for n := 1 + g.pick(3); n > 0 && g.fields < 40; n-- {
		switch c := g.pick(10); {
		case c < 6 || depth == 0:
			parts = append(parts, g.field(def, depth))
		case c < 8:
			// On the type itself (named or not), or on one of its possible types.
			cond, on := def, ""
			if types := g.schema.GetPossibleTypes(def); def.Kind != ast.Object && g.pick(2) == 1 {
				cond = types[g.pick(len(types))]
			}
			if cond != def || g.pick(2) == 1 {
				on = " on " + cond.Name
			}
			parts = append(parts, "..."+on+" "+g.selection(cond, depth))
		default:
			// Spread a fragment on def already made, or make one (never spreading a
			// fragment still being made: no cycles).
			var have []string
			for _, f := range g.frags {
				if f.on == def.Name {
					have = append(have, f.name)
				}
			}
			if len(have) > 0 && g.pick(2) == 0 {
				parts = append(parts, "..."+have[g.pick(len(have))])
				continue
			}
			if g.made >= 4 {
				parts = append(parts, g.field(def, depth))
				continue
			}
			name := fmt.Sprintf("F%d", g.made)
			g.made++ // counted before its text, which may make fragments too
			text := g.selection(def, depth)
			g.frags = append(g.frags, genFrag{name: name, on: def.Name, text: text})
			parts = append(parts, "..."+name)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "__typename") // the document's fields are spent
	}
	return "{ " + strings.Join(parts, " ") + " }"
}

// field is one field of def, under one of few aliases, so that names collide.
func (g *mergeGen) field(def *ast.Definition, depth int) string {
	g.fields++
	var usable []*ast.FieldDefinition
	for _, f := range def.Fields {
		if strings.HasPrefix(f.Name, "__") || !g.simpleArgs(f) {
			continue
		}
		if g.composite(f.Type) && depth == 0 {
			continue
		}
		usable = append(usable, f)
	}
	if len(usable) == 0 || g.pick(6) == 0 {
		return []string{"__typename", "a: __typename", "b: __typename"}[g.pick(3)]
	}
	f := usable[g.pick(len(usable))]
	var b strings.Builder
	b.WriteString([]string{"", "a: ", "b: ", ""}[g.pick(4)])
	b.WriteString(f.Name)
	var args []string
	for _, a := range f.Arguments {
		if !a.Type.NonNull && g.pick(2) == 0 {
			continue
		}
		args = append(args, a.Name+": "+g.value(a.Type))
	}
	if len(args) > 0 {
		b.WriteString("(" + strings.Join(args, ", ") + ")")
	}
	if g.composite(f.Type) {
		b.WriteString(" " + g.selection(g.schema.Types[f.Type.Name()], depth-1))
	}
	return b.String()
}

func (g *mergeGen) composite(t *ast.Type) bool {
	d := g.schema.Types[t.Name()]
	return d != nil && (d.Kind == ast.Object || d.Kind == ast.Interface || d.Kind == ast.Union)
}

// simpleArgs: every argument the field requires can be written as a scalar literal.
func (g *mergeGen) simpleArgs(f *ast.FieldDefinition) bool {
	for _, a := range f.Arguments {
		if a.Type.Elem != nil || g.schema.Types[a.Type.Name()].Kind == ast.InputObject {
			if a.Type.NonNull {
				return false
			}
		}
	}
	return true
}

func (g *mergeGen) value(t *ast.Type) string {
	d := g.schema.Types[t.Name()]
	switch {
	case t.Elem != nil || d.Kind == ast.InputObject:
		return "null"
	case d.Kind == ast.Enum:
		return d.EnumValues[g.pick(min(2, len(d.EnumValues)))].Name
	case d.Name == "Int":
		return []string{"1", "2"}[g.pick(2)]
	case d.Name == "Boolean":
		return []string{"true", "false"}[g.pick(2)]
	default:
		return []string{`"x"`, `"y"`}[g.pick(2)]
	}
}

// TestValidationTimeGrowsWithTheDocument: documents that made gqlparser's validation
// run for seconds to minutes are validated — answered or refused — within a second
// each; before, each of these took from 1.5 s to minutes.
func TestValidationTimeGrowsWithTheDocument(t *testing.T) {
	schema := NewExecutableSchema(Config{}).Schema()
	cfg := DefaultServerConfig()
	chain := func(on, leaf string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "query { %s }\n", strings.ReplaceAll(leaf, "LEAF", "...T0"))
		for i := range n {
			fmt.Fprintf(&b, "fragment T%d on %s { __typename ...T%d ...T%d ...T%d }\n", i, on, i+1, i+1, i+1)
		}
		fmt.Fprintf(&b, "fragment T%d on %s { __typename }\n", n, on)
		return b.String()
	}
	for name, q := range map[string]string{
		"introspection fragments spreading the next three times": chain("__Type", "__schema { types { LEAF } }", 300),
		"fragments on Query spreading the next three times":      chain("Query", "LEAF", 300),
		"2,000 nested inline fragments":                          "query { " + strings.Repeat("... on Query { __typename ", 2000) + strings.Repeat("}", 2000) + " }",
		"5,000 __typename":                                       "query { " + strings.Repeat("__typename ", 5000) + "}",
		"1,500 jobs with a selection":                            "query { " + strings.Repeat("jobs { nodes { id status } } ", 1500) + "}",
		"3,000 aliases of one name":                              "query { " + strings.Repeat("a: __typename ", 3000) + "}",
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			doc, derr := parseBounded(q, cfg.MaxTokens)
			if derr == nil && doc != nil && selectionsToValidate(doc, cfg.MaxSelections) <= cfg.MaxSelections {
				validator.ValidateWithRules(schema, doc, validationRules())
			}
			require.Less(t, time.Since(start), time.Second)
		})
	}
}

// TestFieldsMergeConflictsAreNamed: each group of fields that does not merge is
// reported, with the path of names to it and the reason.
func TestFieldsMergeConflictsAreNamed(t *testing.T) {
	schema := mergeSchemas()[1]
	for doc, want := range map[string][]string{
		`{ a { size } a { size: id } }`: {
			`Fields "a" conflict because subfields "size" conflict because "size" and "id" are different fields.`,
			`Fields "a" conflict because subfields "size" conflict because they return conflicting types "Int" and "ID!".`},
		`{ x: a { id } x: b { id } y: node { id } y: nodes { id } }`: {
			`Fields "x" conflict because "a" and "b" are different fields.`,
			`Fields "y" conflict because they return conflicting types "Node" and "[Node]".`,
			`Fields "y" conflict because "node" and "nodes" are different fields.`},
		`{ search { ... on A { size } ... on B { size } } }`: {
			`Fields "search" conflict because subfields "size" conflict because they return conflicting types "Int" and "String".`},
		`{ node(id: "1") { id } node(id: "2") { id } }`: {`Fields "node" conflict because they have differing arguments.`},
		// Fields of two object types never meet in one answer: other arguments are fine.
		`{ search { ... on A { name(upper: true) } ... on B { name } } }`: nil,
	} {
		q, err := parser.ParseQuery(&ast.Source{Input: doc})
		require.NoError(t, err)
		var got []string
		for _, e := range validator.ValidateWithRules(schema, q, rules.NewRules(fieldsCanMergeRule)) {
			got = append(got, strings.TrimSuffix(e.Message, " Use different aliases on the fields to fetch both if this was intentional."))
		}
		require.ElementsMatch(t, want, got, doc)
	}
}
