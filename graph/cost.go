package graph

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/filemill/filemill/domain"
)

// An operation's cost bounds the size of its answer: a unit of cost is at most about
// costUnitBytes of response. A leaf costs its weight (1, more for a long text or a JSON
// value, by the bound of its size), an object 1 plus its selection, and a list its
// bound (the page size asked for, else the most the list can hold) times that.
// Introspection is counted the same way on the schema itself, so its cost is exact.
const costUnitBytes = 256

// maxCostSteps bounds the work of computing a cost: a document that would take more
// (thousands of inline copies of a deep introspection) is refused as too costly.
const maxCostSteps = 1_000_000

// costModel holds the bound of every list field and the weight of the leaves heavier
// than 1, by "Type.field".
type costModel struct {
	schema  *ast.Schema
	lists   map[string]func(args map[string]any) int
	weights map[string]int
}

// fixed is the bound of a list that holds at most n items.
func fixed(n int) func(map[string]any) int { return func(map[string]any) int { return max(n, 1) } }

// page is the bound of a connection: the page asked for (first), which the domain
// holds to 1–100.
func page(args map[string]any) int {
	n := domain.DefaultPageSize
	switch v := args["first"].(type) {
	case int64:
		n = int(min(max(v, 1), domain.MaxPageSize))
	case int:
		n = min(max(v, 1), domain.MaxPageSize)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			n = int(min(max(i, 1), domain.MaxPageSize))
		}
	case float64:
		n = int(min(max(v, 1), domain.MaxPageSize))
	}
	return n
}

// Bounds of lists the domain does not hold to a constant of its own.
const (
	// maxFindings: the checks of a file's validation (six) and the scanner's verdict.
	maxFindings = 8
	// maxKeyList bounds a key's allowed projects and address list, which only an
	// operator sets (filemill keys create).
	maxKeyList = 100
	// maxValidationFormats is what validation.formats accepts.
	maxValidationFormats = 32
)

// newCostModel builds the model of the schema, with the catalog's bounds (how many
// operations, steps, formats) read from reg.
func newCostModel(schema *ast.Schema, reg *domain.Registry) *costModel {
	m := &costModel{schema: schema, lists: map[string]func(map[string]any) int{}, weights: map[string]int{}}
	for _, f := range []string{"Query.files", "Query.jobs", "Query.events", "Query.webhookEndpoints",
		"Job.artifactsConnection", "WebhookEndpoint.deliveries", "Query.apiKeys"} {
		m.lists[f] = page
	}
	// A connection's edges and nodes are counted by the connection's page size.
	for name, def := range schema.Types {
		if strings.HasSuffix(name, "Connection") && def.Kind == ast.Object {
			m.lists[name+".edges"] = fixed(1)
			m.lists[name+".nodes"] = fixed(1)
		}
	}
	var ops, steps, formats, when, maxSchema, maxText, maxStepOptions int
	if reg != nil {
		for _, op := range reg.List() {
			ops++
			steps = max(steps, len(op.Steps))
			formats = max(formats, len(op.InputFormats))
			maxText = max(maxText, len(op.Description))
			v := op.View(func(string) bool { return true })
			if raw, err := json.Marshal(v.OptionsSchema); err == nil {
				maxSchema = max(maxSchema, len(raw))
			}
			maxText = max(maxText, len(v.PriceRule))
			for _, st := range op.Steps {
				when = max(when, len(st.When))
				maxStepOptions = max(maxStepOptions, len(st.Options))
			}
		}
	}
	for f, n := range map[string]int{
		"File.artifacts":                domain.FileArtifactPreview,
		"File.history":                  domain.FileHistoryPreview,
		"File.findings":                 maxFindings,
		"Job.artifacts":                 domain.ArtifactPreview,
		"Batch.items":                   domain.MaxBatchSize,
		"Pricing.lines":                 max(steps, 1),
		"Query.operations":              ops,
		"Operation.inputFormats":        formats,
		"Operation.steps":               steps,
		"OperationStep.when":            when,
		"Upload.parts":                  domain.MaxPartCount,
		"Validation.formats":            maxValidationFormats,
		"ApiKey.scopes":                 len(domain.AllScopes),
		"ApiKey.allowedOperations":      ops,
		"ApiKey.allowedProjects":        maxKeyList,
		"ApiKey.ipAllowList":            maxKeyList,
		"WebhookEndpoint.enabledEvents": len(domain.SubscribableEvents),
		"WebhookDelivery.attempts":      domain.DeliveryAttemptsShown,
		"Viewer.scopes":                 len(domain.AllScopes),
		"Query.projects":                domain.DefaultConfig().MaxProjects,
		"Query.members":                 domain.DefaultConfig().MaxMembers,
		"Query.invitations":             domain.DefaultConfig().MaxMembers,
		"Query.sessions":                domain.MaxSessionsListed,
		"UsageSeries.days":              domain.MaxUsageDays,
		"UsageSeries.operations":        ops,
		"JobEstimate.files":             domain.MaxBatchSize,
	} {
		m.lists[f] = fixed(n)
	}
	units := func(bytes int) int { return 1 + bytes/costUnitBytes }
	for f, w := range map[string]int{
		"Operation.optionsSchema": units(maxSchema),
		"Operation.description":   units(maxText),
		"Operation.priceRule":     units(maxText),
		"OperationStep.options":   units(maxStepOptions),
		// A job's options are checked against its operation's schema: strings of at
		// most 1,000 characters, a handful of them.
		"Job.options":   units(4 << 10),
		"Batch.options": units(4 << 10),
		// An event carries its subject as REST shows it: a job with its first
		// artifacts and its pricing at most.
		"Event.data":        units(8 << 10),
		"HistoryEntry.data": units(8 << 10),
		// Signed URLs and their headers.
		"Upload.uploadUrl":                       units(1 << 10),
		"UploadPart.url":                         units(1 << 10),
		"DownloadUrl.url":                        units(1 << 10),
		"Upload.uploadHeaders":                   units(512),
		"WebhookDeliveryAttempt.responseSnippet": units(domain.ResponseSnippetBytes),
	} {
		m.weights[f] = w
	}
	return m
}

// operationCost is the cost of an operation's selection with its variables, and
// whether computing it took too long (then it is over any limit).
func (m *costModel) operationCost(op *ast.OperationDefinition, frags ast.FragmentDefinitionList, vars map[string]any) (int, bool) {
	w := &costWalk{m: m, frags: fragmentsOf(frags), vars: vars, fragCosts: map[string]int{}, introCosts: map[introKey]int{},
		types: map[string]*ast.Type{}}
	c := w.set(op.SelectionSet)
	if w.steps > maxCostSteps {
		return math.MaxInt32, true
	}
	return c, false
}

type costWalk struct {
	m          *costModel
	frags      fragments
	vars       map[string]any
	steps      int
	fragCosts  map[string]int
	introCosts map[introKey]int
	types      map[string]*ast.Type // wrapped type references, one per spelling
}

func satAdd(a, b int) int { return min(a+b, math.MaxInt32) }

func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt32/a {
		return math.MaxInt32
	}
	return min(a*b, math.MaxInt32)
}

// set is the cost of a selection of the schema's own types: its fields, those of its
// inline fragments, and those of each fragment it spreads, once however often it is
// spread there (the answer holds them once: execution collects a fragment once).
func (w *costWalk) set(set ast.SelectionSet) int {
	total := w.direct(set)
	for _, name := range w.spreads(set) {
		c, ok := w.fragCosts[name]
		if !ok {
			w.fragCosts[name] = 0 // a cycle (refused by validation) ends here
			if f := w.frags[name]; f != nil {
				c = w.direct(f.SelectionSet)
			}
			w.fragCosts[name] = c
		}
		total = satAdd(total, c)
	}
	return total
}

// direct is the cost of the fields of set and of its inline fragments, not of the
// fragments it spreads.
func (w *costWalk) direct(set ast.SelectionSet) int {
	total := 0
	for _, sel := range set {
		if w.steps++; w.steps > maxCostSteps {
			return math.MaxInt32
		}
		switch s := sel.(type) {
		case *ast.Field:
			total = satAdd(total, w.field(s))
		case *ast.InlineFragment:
			total = satAdd(total, w.direct(s.SelectionSet))
		}
	}
	return total
}

// spreads names the fragments set collects — spread in it, in its inline fragments or
// in those fragments — each once.
func (w *costWalk) spreads(set ast.SelectionSet) []string {
	return collectSpreads(set, w.frags, func(ast.Selection) bool {
		w.steps++
		return w.steps <= maxCostSteps
	})
}

// collectSpreads names the fragments a selection set collects, each once, in the order
// met; visit is called with each selection walked and stops the walk when it says so.
func collectSpreads(set ast.SelectionSet, frags fragments, visit func(ast.Selection) bool) []string {
	var out []string
	visited := map[string]bool{}
	var walk func(ast.SelectionSet) bool
	walk = func(set ast.SelectionSet) bool {
		for _, sel := range set {
			if !visit(sel) {
				return false
			}
			switch s := sel.(type) {
			case *ast.InlineFragment:
				if !walk(s.SelectionSet) {
					return false
				}
			case *ast.FragmentSpread:
				if visited[s.Name] {
					continue
				}
				visited[s.Name] = true
				out = append(out, s.Name)
				if f := frags[s.Name]; f != nil && !walk(f.SelectionSet) {
					return false
				}
			}
		}
		return true
	}
	walk(set)
	return out
}

func (w *costWalk) field(f *ast.Field) int {
	switch f.Name {
	case "__typename":
		return 1
	case "__schema":
		return satAdd(1, w.intro(f.SelectionSet, introValue{kind: introSchema}))
	case "__type":
		name, _ := argsOf(f, w.vars)["name"].(string)
		def := w.m.schema.Types[name]
		if def == nil {
			return 1
		}
		return satAdd(1, w.intro(f.SelectionSet, introValue{kind: introType, def: def}))
	}
	key := ""
	if f.ObjectDefinition != nil {
		key = f.ObjectDefinition.Name + "." + f.Name
	}
	n := 1
	if bound, ok := w.m.lists[key]; ok && f.Definition != nil {
		n = bound(argsOf(f, w.vars))
	}
	if len(f.SelectionSet) == 0 {
		return satMul(n, max(w.m.weights[key], 1))
	}
	return satAdd(1, satMul(n, w.set(f.SelectionSet)))
}

// argsOf is a field's arguments, defaults included. gqlparser panics on a literal it
// cannot read, which validation has refused already: no arguments then.
func argsOf(f *ast.Field, vars map[string]any) (args map[string]any) {
	defer func() {
		if recover() != nil {
			args = nil
		}
	}()
	return f.ArgumentMap(vars)
}

// Introspection is counted on the schema it describes, as gqlgen's introspection
// package answers it: every type, field, argument and type reference it would write.

type introKind uint8

const (
	introSchema introKind = iota
	introType
	introField
	introInput
	introEnum
	introDirective
)

// introValue is one object of introspection: the schema, a type (a definition, or a
// list or non-null reference), a field, an argument or input field, an enum value or
// a directive.
type introValue struct {
	kind  introKind
	def   *ast.Definition
	typ   *ast.Type
	field *ast.FieldDefinition
	arg   *ast.ArgumentDefinition
	enum  *ast.EnumValueDefinition
	dir   *ast.DirectiveDefinition
}

type introKey struct {
	fragment string
	value    introValue
}

// text is what a text of the schema costs: 1, more for a long description.
func text(s string) int { return 1 + len(s)/costUnitBytes }

func (w *costWalk) intro(set ast.SelectionSet, v introValue) int {
	total := w.introDirect(set, v)
	for _, name := range w.spreads(set) {
		key := introKey{fragment: name, value: v}
		c, ok := w.introCosts[key]
		if !ok {
			w.introCosts[key] = 0
			if f := w.frags[name]; f != nil {
				c = w.introDirect(f.SelectionSet, v)
			}
			w.introCosts[key] = c
		}
		total = satAdd(total, c)
	}
	return total
}

// introDirect is intro for the fields of set and of its inline fragments.
func (w *costWalk) introDirect(set ast.SelectionSet, v introValue) int {
	total := 0
	for _, sel := range set {
		if w.steps++; w.steps > maxCostSteps {
			return math.MaxInt32
		}
		switch s := sel.(type) {
		case *ast.Field:
			total = satAdd(total, w.introField(s, v))
		case *ast.InlineFragment:
			total = satAdd(total, w.introDirect(s.SelectionSet, v))
		}
	}
	return total
}

// list is the cost of a list field over its items.
func (w *costWalk) list(set ast.SelectionSet, items []introValue) int {
	total := 1
	for _, it := range items {
		total = satAdd(total, w.intro(set, it))
		if total == math.MaxInt32 {
			break
		}
	}
	return total
}

// object is the cost of a field holding one object, or null.
func (w *costWalk) object(set ast.SelectionSet, v *introValue) int {
	if v == nil {
		return 1
	}
	return satAdd(1, w.intro(set, *v))
}

// ref is the introspection type of a type reference: its definition when it is a
// nullable named type, else a wrapper (NON_NULL, LIST).
func (w *costWalk) ref(t *ast.Type) introValue {
	if !t.NonNull && t.NamedType != "" {
		return introValue{kind: introType, def: w.m.schema.Types[t.NamedType]}
	}
	key := t.String()
	if have, ok := w.types[key]; ok {
		t = have
	} else {
		w.types[key] = t
	}
	return introValue{kind: introType, typ: t}
}

func (w *costWalk) introField(f *ast.Field, v introValue) int {
	sch, set := w.m.schema, f.SelectionSet
	if f.Name == "__typename" {
		return 1
	}
	switch v.kind {
	case introSchema:
		switch f.Name {
		case "description":
			return text(sch.Description)
		case "types":
			items := make([]introValue, 0, len(sch.Types))
			for _, d := range sch.Types {
				items = append(items, introValue{kind: introType, def: d})
			}
			return w.list(set, items)
		case "queryType", "mutationType", "subscriptionType":
			d := map[string]*ast.Definition{"queryType": sch.Query, "mutationType": sch.Mutation, "subscriptionType": sch.Subscription}[f.Name]
			if d == nil {
				return 1
			}
			return w.object(set, &introValue{kind: introType, def: d})
		case "directives":
			items := make([]introValue, 0, len(sch.Directives))
			for _, d := range sch.Directives {
				items = append(items, introValue{kind: introDirective, dir: d})
			}
			return w.list(set, items)
		}
	case introType:
		d := v.def
		if v.typ != nil {
			d = nil
		}
		switch f.Name {
		case "description":
			if d == nil {
				return 1
			}
			return text(d.Description)
		case "fields":
			var items []introValue
			if d != nil && (d.Kind == ast.Object || d.Kind == ast.Interface) {
				for _, fd := range d.Fields {
					if !strings.HasPrefix(fd.Name, "__") {
						items = append(items, introValue{kind: introField, field: fd})
					}
				}
			}
			return w.list(set, items)
		case "interfaces":
			var items []introValue
			if d != nil && (d.Kind == ast.Object || d.Kind == ast.Interface) {
				for _, name := range d.Interfaces {
					items = append(items, introValue{kind: introType, def: sch.Types[name]})
				}
			}
			return w.list(set, items)
		case "possibleTypes":
			var items []introValue
			if d != nil && (d.Kind == ast.Interface || d.Kind == ast.Union) {
				for _, pt := range sch.GetPossibleTypes(d) {
					items = append(items, introValue{kind: introType, def: pt})
				}
			}
			return w.list(set, items)
		case "enumValues":
			var items []introValue
			if d != nil && d.Kind == ast.Enum {
				for _, ev := range d.EnumValues {
					items = append(items, introValue{kind: introEnum, enum: ev})
				}
			}
			return w.list(set, items)
		case "inputFields":
			var items []introValue
			if d != nil && d.Kind == ast.InputObject {
				for _, fd := range d.Fields {
					items = append(items, introValue{kind: introInput, typ: fd.Type, field: fd})
				}
			}
			return w.list(set, items)
		case "ofType":
			if v.typ == nil {
				return 1
			}
			inner := v.typ.Elem
			if v.typ.NonNull {
				cp := *v.typ
				cp.NonNull = false
				inner = &cp
			}
			if inner == nil {
				return 1
			}
			of := w.ref(inner)
			return w.object(set, &of)
		}
	case introField:
		switch f.Name {
		case "description":
			return text(v.field.Description)
		case "args":
			items := make([]introValue, 0, len(v.field.Arguments))
			for _, a := range v.field.Arguments {
				items = append(items, introValue{kind: introInput, typ: a.Type, arg: a})
			}
			return w.list(set, items)
		case "type":
			t := w.ref(v.field.Type)
			return w.object(set, &t)
		}
	case introInput:
		switch f.Name {
		case "description":
			if v.arg != nil {
				return text(v.arg.Description)
			}
			return text(v.field.Description)
		case "defaultValue":
			dv := (*ast.Value)(nil)
			if v.arg != nil {
				dv = v.arg.DefaultValue
			} else if v.field != nil {
				dv = v.field.DefaultValue
			}
			if dv == nil {
				return 1
			}
			return text(dv.String())
		case "type":
			t := w.ref(v.typ)
			return w.object(set, &t)
		}
	case introEnum:
		if f.Name == "description" {
			return text(v.enum.Description)
		}
	case introDirective:
		switch f.Name {
		case "description":
			return text(v.dir.Description)
		case "locations":
			return max(len(v.dir.Locations), 1)
		case "args":
			items := make([]introValue, 0, len(v.dir.Arguments))
			for _, a := range v.dir.Arguments {
				items = append(items, introValue{kind: introInput, typ: a.Type, arg: a})
			}
			return w.list(set, items)
		}
	}
	// Names, kinds, flags and deprecation reasons.
	return 1
}
