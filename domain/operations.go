package domain

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// Operation kinds.
const (
	KindOperation = "operation"
	KindPreset    = "preset"
)

// Operation is an operation or a preset of the registry.
type Operation struct {
	Name        string
	Kind        string
	Description string
	Engine      string // an operation's engine family
	Price       Price  // an operation's; a preset costs the sum of the steps that run
	// InputFormats lists accepted inputs: extensions, MIME types or families ("image/*");
	// "*" accepts anything.
	InputFormats []string
	// FileIDsOption names the option listing further input files; "" for one file.
	FileIDsOption string
	// Hidden operations run only as preset steps: not listed, not requested directly.
	Hidden bool
	// Timeout is the operation's own deadline for one attempt; zero: the job timeout.
	Timeout time.Duration
	Steps   []*Step // a preset's pipeline
	codec   *optionsCodec
	// planFunc plans a run of an operation; nil: it reads its whole input.
	planFunc PlanFunc
}

// Step is one step of a preset: an operation with fixed options, reading the output
// the step before it passed on (the file, for the first step).
type Step struct {
	Name      string // carried by the step's artifacts, e.g. "thumbnail"
	Operation *Operation
	// Options are the step's fixed options, canonical; the preset's own options are
	// added to them for the options the step's operation knows.
	Options json.RawMessage
	// When lists the formats of the job's file the step runs for; for other files it
	// is left out of the pipeline. Empty: always.
	When []string
	// Intermediate steps pass their output on without storing it as an artifact.
	Intermediate bool
	// FromFile steps read the job's file rather than what the step before passed on.
	FromFile bool
	// OutputSuffix is added to the names of the step's outputs, before their extension,
	// so that steps making the same kind of output name theirs apart ("-256").
	OutputSuffix string
	// Skip, when set, is asked when the step's turn comes with the file it would
	// read: true leaves it out, the next step reading that file instead, and it is
	// not charged (a step only the file's content can tell is not needed: ai-ready's
	// conversion of a DOCX that carries its own pages).
	Skip func(EngineFile) bool
}

// OutputName is the name an output named name of the step is stored under.
func (st *Step) OutputName(name string) string {
	if st.OutputSuffix == "" {
		return name
	}
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + st.OutputSuffix + ext
}

// PresetSpec declares a preset: a pipeline of operations with fixed options.
type PresetSpec struct {
	Name         string
	Description  string
	InputFormats []string
	// Options is the zero value of the preset's own options struct (nil: none); each is
	// handed to the steps whose operation takes an option of that name.
	Options any
	Steps   []StepSpec
}

// StepSpec declares one step of a preset.
type StepSpec struct {
	Name         string
	Operation    string
	Options      string // fixed options, as a JSON object
	When         []string
	Intermediate bool
	FromFile     bool
	OutputSuffix string                // see Step.OutputSuffix
	Skip         func(EngineFile) bool // see Step.Skip
}

// Registry is every operation and preset this deployment knows, built from what the
// engine packages declare. Which of them can run now is the workers' to say
// (EngineDirectory).
type Registry struct {
	ops     map[string]*Operation
	presets map[string]*Operation
	order   []*Operation
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{ops: map[string]*Operation{}, presets: map[string]*Operation{}}
}

// AddOperations registers operations; a name registered twice or an options struct
// whose tags do not compile is an error.
func (r *Registry) AddOperations(specs ...OperationSpec) error {
	for _, s := range specs {
		if s.Name == "" || s.Engine == "" {
			return fmt.Errorf("operation %q: a name and an engine are required", s.Name)
		}
		if r.ops[s.Name] != nil {
			return fmt.Errorf("operation %s is registered twice", s.Name)
		}
		if s.Price.Per != PerFile && s.Price.Per != PerPage && s.Price.Per != PerOutput {
			return fmt.Errorf("operation %s: price per %q; want file, page or output", s.Name, s.Price.Per)
		}
		codec, err := newOptionsCodec(s.Options)
		if err != nil {
			return fmt.Errorf("operation %s options: %w", s.Name, err)
		}
		if s.FileIDsOption != "" {
			if p := codec.schema.prop(s.FileIDsOption); p == nil || p.node.typ != "array" || p.node.items.typ != "string" {
				return fmt.Errorf("operation %s: FileIDsOption %q is not a list of strings among its options", s.Name, s.FileIDsOption)
			}
		}
		op := &Operation{Name: s.Name, Kind: KindOperation, Description: s.Description, Engine: s.Engine, Price: s.Price,
			InputFormats: s.InputFormats, FileIDsOption: s.FileIDsOption, Hidden: s.Hidden, Timeout: s.Timeout, codec: codec, planFunc: s.Plan}
		r.ops[s.Name] = op
		r.order = append(r.order, op)
	}
	return nil
}

// AddPreset registers a preset whose steps' operations are registered already. Each
// step's fixed options are checked against its operation now, so a preset that could
// never run is refused at start-up.
func (r *Registry) AddPreset(s PresetSpec) error {
	if r.presets[s.Name] != nil {
		return fmt.Errorf("preset %s is registered twice", s.Name)
	}
	if len(s.Steps) == 0 {
		return fmt.Errorf("preset %s has no steps", s.Name)
	}
	codec, err := newOptionsCodec(s.Options)
	if err != nil {
		return fmt.Errorf("preset %s options: %w", s.Name, err)
	}
	p := &Operation{Name: s.Name, Kind: KindPreset, Description: s.Description, InputFormats: s.InputFormats, codec: codec}
	names := map[string]bool{}
	for _, ss := range s.Steps {
		op := r.ops[ss.Operation]
		if op == nil {
			return fmt.Errorf("preset %s: step %s runs %q, which is not registered", s.Name, ss.Name, ss.Operation)
		}
		if op.FileIDsOption != "" {
			return fmt.Errorf("preset %s: step %s runs %s, which takes several files", s.Name, ss.Name, op.Name)
		}
		if ss.Name == "" || names[ss.Name] {
			return fmt.Errorf("preset %s: every step needs a name of its own (%q)", s.Name, ss.Name)
		}
		names[ss.Name] = true
		opts := ss.Options
		if opts == "" {
			opts = "{}"
		}
		canon, err := op.codec.canonical(json.RawMessage(opts))
		if err != nil {
			return fmt.Errorf("preset %s: step %s options: %w", s.Name, ss.Name, err)
		}
		p.Steps = append(p.Steps, &Step{Name: ss.Name, Operation: op, Options: canon, When: ss.When,
			Intermediate: ss.Intermediate, FromFile: ss.FromFile, OutputSuffix: ss.OutputSuffix, Skip: ss.Skip})
	}
	for _, prop := range codec.schema.props {
		taken := false
		for _, st := range p.Steps {
			taken = taken || st.Operation.codec.schema.prop(prop.name) != nil
		}
		if !taken {
			return fmt.Errorf("preset %s: option %s is taken by none of its steps", s.Name, prop.name)
		}
	}
	last := p.Steps[len(p.Steps)-1]
	if last.Intermediate {
		return fmt.Errorf("preset %s: its last step %s cannot be intermediate", s.Name, last.Name)
	}
	r.presets[s.Name] = p
	r.order = append(r.order, p)
	return nil
}

// Operation returns the operation named name, or nil.
func (r *Registry) Operation(name string) *Operation { return r.ops[name] }

// Preset returns the preset named name, or nil.
func (r *Registry) Preset(name string) *Operation { return r.presets[name] }

// Find returns the operation or preset a job names.
func (r *Registry) Find(operation, preset string) *Operation {
	if preset != "" {
		return r.presets[preset]
	}
	return r.ops[operation]
}

// List returns what clients may request: operations then presets, in registration order.
func (r *Registry) List() []*Operation {
	out := make([]*Operation, 0, len(r.order))
	for _, op := range r.order {
		if !op.Hidden {
			out = append(out, op)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind == KindOperation && out[j].Kind == KindPreset })
	return out
}

// PresetNames lists the presets, for messages.
func (r *Registry) PresetNames() []string {
	var out []string
	for _, op := range r.order {
		if op.Kind == KindPreset {
			out = append(out, op.Name)
		}
	}
	return out
}

// Pipeline returns the steps that run for a file of format f: the operation itself,
// or the preset's steps whose When takes the job's file format.
func (op *Operation) Pipeline(f Format) []*Step {
	if op.Kind == KindOperation {
		return []*Step{{Name: op.Name, Operation: op}}
	}
	var out []*Step
	for _, st := range op.Steps {
		if len(st.When) == 0 || formatIn(f, st.When) {
			out = append(out, st)
		}
	}
	return out
}

func formatIn(f Format, list []string) bool {
	for _, e := range list {
		if e == "*" || FormatMatches(f, e) {
			return true
		}
	}
	return false
}

// Engines names the engine families an input of format f needs, sorted.
func (op *Operation) Engines(f Format) []string {
	var out []string
	for _, st := range op.Pipeline(f) {
		if !slices.Contains(out, st.Operation.Engine) {
			out = append(out, st.Operation.Engine)
		}
	}
	sort.Strings(out)
	return out
}

// operations lists the operations it may run: itself, or every step's.
func (op *Operation) operations() []*Operation {
	if op.Kind == KindOperation {
		return []*Operation{op}
	}
	out := make([]*Operation, len(op.Steps))
	for i, st := range op.Steps {
		out[i] = st.Operation
	}
	return out
}

// allEngines names every engine family any of its steps may need.
func (op *Operation) allEngines() []string {
	if op.Kind == KindOperation {
		return []string{op.Engine}
	}
	var out []string
	for _, st := range op.Steps {
		if !slices.Contains(out, st.Operation.Engine) {
			out = append(out, st.Operation.Engine)
		}
	}
	sort.Strings(out)
	return out
}

// QueueName is the queue of the jobs that need these engine families: a worker takes
// jobs from a queue only when it runs every family the queue names.
func QueueName(families []string) string { return "engine:" + strings.Join(families, "+") }

// Accepts reports whether the operation takes a file of this format.
func (op *Operation) Accepts(f Format) bool { return formatIn(f, op.InputFormats) }

// ValidateOptions checks options against the operation's schema and its rules across
// fields, and returns them in canonical form (defaults filled in). Codes:
// invalid_request with param options.NAME.
func (op *Operation) ValidateOptions(raw json.RawMessage) (json.RawMessage, error) {
	return op.codec.canonical(raw)
}

// DecodeOptions checks options as ValidateOptions does and returns them as a value of
// the operation's options type (the OperationSpec's Options; nil when it takes none):
// what its engine's Run receives in EngineInput.Options, already checked.
func (op *Operation) DecodeOptions(raw json.RawMessage) (any, error) {
	_, v, err := op.codec.decode(raw)
	return v, err
}

// DecodeOptions decodes and checks options for the operation named op among specs,
// outside a registry but as the registry does (Operation.DecodeOptions): for running
// an engine directly, as its tests and benchmarks do.
func DecodeOptions(specs []OperationSpec, op string, raw json.RawMessage) (any, error) {
	for _, spec := range specs {
		if spec.Name != op {
			continue
		}
		c, err := newOptionsCodec(spec.Options)
		if err != nil {
			return nil, err
		}
		_, v, err := c.decode(raw)
		return v, err
	}
	return nil, fmt.Errorf("no operation %q among the specs", op)
}

// StepOptions are the options a step runs with: its fixed options, plus those of the
// job's (preset) options its operation takes. A direct operation runs with the job's.
func (st *Step) StepOptions(job json.RawMessage) (json.RawMessage, error) {
	if st.Options == nil {
		return job, nil
	}
	var fixed, given map[string]any
	if err := json.Unmarshal(st.Options, &fixed); err != nil {
		return nil, err
	}
	if len(job) > 0 {
		if err := json.Unmarshal(job, &given); err != nil {
			return nil, err
		}
	}
	for k, v := range given {
		if st.Operation.codec.schema.prop(k) != nil {
			fixed[k] = v
		}
	}
	return json.Marshal(fixed)
}

// OperationView is the operation object of GET /v1/operations.
type OperationView struct {
	Object        string         `json:"object"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind"`
	Description   string         `json:"description"`
	Available     bool           `json:"available"`
	Engine        string         `json:"engine"`
	Price         *Price         `json:"price"` // an operation's; nil for a preset, whose steps have theirs
	PriceRule     string         `json:"price_rule"`
	InputFormats  []string       `json:"input_formats"`
	OptionsSchema map[string]any `json:"options_schema"`
	Steps         []StepView     `json:"steps,omitempty"`
}

// StepView is one step of a preset as GET /v1/operations shows it.
type StepView struct {
	Name      string          `json:"name"`
	Operation string          `json:"operation"`
	Options   json.RawMessage `json:"options"`
	When      []string        `json:"when,omitempty"`
	Price     Price           `json:"price"`
}

// View returns the operation's representation given the engine families live workers
// run. A preset is available when every engine any of its steps may need is.
func (op *Operation) View(live func(engine string) bool) OperationView {
	ok := true
	engines := op.allEngines()
	for _, e := range engines {
		ok = ok && live(e)
	}
	v := OperationView{Object: "operation", Name: op.Name, Kind: op.Kind, Description: op.Description, Available: ok,
		Engine: strings.Join(engines, "+"), PriceRule: op.PriceRule(), InputFormats: op.InputFormats, OptionsSchema: op.OptionsSchema()}
	if op.Kind == KindOperation {
		price := op.Price
		v.Price = &price
	}
	for _, st := range op.Steps {
		v.Steps = append(v.Steps, StepView{Name: st.Name, Operation: st.Operation.Name, Options: st.Options, When: st.When,
			Price: st.Operation.Price})
	}
	return v
}

// OptionsSchema is the JSON schema of the operation's options.
func (op *Operation) OptionsSchema() map[string]any { return op.codec.schema.JSONSchema() }

// EngineSets lists every set of engine families a job may need (a preset needs
// different ones for different inputs), each sorted: the queues jobs can be put on.
func (r *Registry) EngineSets() [][]string {
	seen := map[string]bool{}
	var out [][]string
	add := func(set []string) {
		set = slices.Compact(slices.Sorted(slices.Values(set)))
		if k := strings.Join(set, "+"); !seen[k] {
			seen[k] = true
			out = append(out, set)
		}
	}
	for _, op := range r.order {
		if op.Kind == KindOperation {
			if !op.Hidden {
				add([]string{op.Engine})
			}
			continue
		}
		var always []string
		var optional []*Step
		for _, st := range op.Steps {
			if len(st.When) == 0 {
				always = append(always, st.Operation.Engine)
			} else {
				optional = append(optional, st)
			}
		}
		for mask := 0; mask < 1<<len(optional); mask++ {
			set := slices.Clone(always)
			for i, st := range optional {
				if mask&(1<<i) != 0 {
					set = append(set, st.Operation.Engine)
				}
			}
			add(set)
		}
	}
	return out
}
