package domain

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// A job is planned before it is admitted: each step of its pipeline says, from its
// options and what is known of its input, what it will read and make. The plan refuses
// what cannot run (a page past the end, a language no worker has, more artifacts than a
// job may hold, a document longer than the engine reads), and prices what will run. The
// same price, applied to what each step actually read and made, is the charge.

// Price units: what a price counts.
const (
	PerFile   = "file"   // once per run of the step
	PerPage   = "page"   // per page the step reads
	PerOutput = "output" // per document (artifact) the step makes
)

// Price is what an operation costs: Credits for each unit it counts.
type Price struct {
	Credits int64  `json:"credits"`
	Per     string `json:"per"` // PerFile, PerPage or PerOutput
}

// Units is how many units of the price w counts: one per file, the pages it read, or
// the documents it made, at least one.
func (p Price) Units(w Work) int {
	switch p.Per {
	case PerPage:
		return max(w.Pages, 1)
	case PerOutput:
		return max(w.Outputs, 1)
	}
	return 1
}

// Cost is the price of w.
func (p Price) Cost(w Work) int64 { return p.Credits * int64(p.Units(w)) }

// Rule says the price in words, e.g. "2 credits per page read".
func (p Price) Rule() string {
	unit := map[string]string{PerFile: "file", PerPage: "page read", PerOutput: "document made"}[p.Per]
	return fmt.Sprintf("%s per %s", plural(p.Credits, "credit", "credits"), unit)
}

// plural is "1 page", "3 pages".
func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Work is what one step reads and makes, in the units prices count.
type Work struct {
	Pages    int // pages it reads
	Outputs  int // documents it makes; 0 for a fixed few (a report, a text)
	OutPages int // pages of what it passes on to the next step
}

// PlanInput is what is known of a step's input before the job runs.
type PlanInput struct {
	// Pages are the input's pages: counted at completion (an image is one page), or,
	// when Counted is false, an estimate from its size.
	Pages   int
	Counted bool
	// Inputs are the pages of an operation's further input files (pdf.merge's), 0 when
	// not counted.
	Inputs []int
	// Engine is what the live workers running the step's engine family told: the
	// languages they have and the longest document they read.
	Engine EngineInfo
	// MaxOutputs is the most documents the step may make: what the job may hold less
	// what the steps before it keep.
	MaxOutputs int
	// Format and Filename are the job's file's detected format and name when the step
	// reads that file; zero when it reads what an earlier step made, or the file's
	// format is not known yet (a plan then refuses nothing for its format).
	Format   Format
	Filename string
}

// PlanFunc tells what a step will read and make from its canonical options and its
// input, and refuses options its input cannot satisfy with an error naming the option
// (OptionRefused). An operation without one reads its whole input and makes a few
// documents.
//
// options is a value of the operation's options type (nil when it takes none), decoded
// and checked by the registry as a run's are (OptionsAs reads it).
type PlanFunc func(options any, in PlanInput) (Work, error)

// OptionRefused is the error of options that are well formed but that the job's input
// or the deployment cannot satisfy (a page the document does not have, a language no
// worker has): validation_failed naming the option, with the reason as its finding.
func OptionRefused(param, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: CodeValidationFailed, Param: param, Message: msg,
		Details: map[string]any{"findings": []Finding{{Code: "option_not_satisfiable", Message: msg}}}}
}

// Pricing is how a job's reservation was computed: the catalog's rule applied to what
// the steps that run for its file will read and make.
type Pricing struct {
	// Rule is the rule of the steps that run, in words.
	Rule string `json:"rule"`
	// Pages are the file's pages the plan started from; Estimated when they were not
	// counted but estimated from its size: then the charge may be lower.
	Pages     int           `json:"pages"`
	Estimated bool          `json:"estimated"`
	Lines     []PricingLine `json:"lines"`
	Credits   int64         `json:"credits"` // the reservation: the sum of the lines
}

// PricingLine is one step's part of a job's price.
type PricingLine struct {
	Step      string `json:"step"`
	Operation string `json:"operation"`
	Price     Price  `json:"price"`
	Units     int    `json:"units"`
	Credits   int64  `json:"credits"`
}

// inputPages are the pages a plan starts from: those counted at completion, one for an
// image, or else an estimate from the size.
func inputPages(f *File) (pages int, counted bool) {
	switch {
	case f.Pages > 0:
		return f.Pages, true
	case strings.HasPrefix(f.DetectedMIMEType, "image/"):
		return 1, true
	}
	return estimatePages(f), false
}

// estimatePages guesses the pages of a file whose pages were not counted (a format
// without a cheap count, or too large to count): settlement charges what was
// processed, never more than the reservation made from this guess.
func estimatePages(f *File) int {
	const bytesPerPage = 64 << 10
	pages := (f.ByteSize + bytesPerPage - 1) / bytesPerPage
	return int(max(1, min(pages, 2000)))
}

// planRequest is what planning a job on one file needs.
type planRequest struct {
	file    *File
	options json.RawMessage // the job's, canonical
	inputs  []*File         // further input files, in the order the options name them
	live    map[string]EngineInfo
	// maxArtifacts bounds the artifacts of the job; 0: no bound.
	maxArtifacts int
}

// plan plans op on a file: each step that runs for its format, in order, reading the
// pages the step before passed on. It returns the job's pricing. Codes:
// validation_failed (an option the input cannot satisfy, or more artifacts than a job
// may hold), unsupported_input (a document longer than the engine reads),
// invalid_request (options that do not decode).
func (op *Operation) plan(r planRequest) (*Pricing, error) {
	pages, counted := inputPages(r.file)
	pr := &Pricing{Pages: pages, Estimated: !counted}
	var inputs []int
	for _, x := range r.inputs {
		inputs = append(inputs, x.Pages)
	}
	first := PlanInput{Pages: pages, Counted: counted, Inputs: inputs, Format: r.file.Format(), Filename: r.file.Filename}
	cur := first
	kept := 0
	var rules []string
	for _, st := range op.Pipeline(r.file.Format()) {
		in := cur
		if st.FromFile {
			in = first
		}
		in.Engine = r.live[st.Operation.Engine]
		in.MaxOutputs = 0
		if r.maxArtifacts > 0 {
			in.MaxOutputs = max(r.maxArtifacts-kept, 0)
		}
		if in.Counted && in.Engine.MaxPages > 0 && in.Pages > in.Engine.MaxPages {
			return nil, &Error{Code: CodeUnsupportedInput, Param: "file_id",
				Message: fmt.Sprintf("%s reads documents of at most %d pages; this one has %d", st.Operation.Name, in.Engine.MaxPages, in.Pages),
				Details: map[string]any{"file_id": r.file.ID, "pages": in.Pages, "max_pages": in.Engine.MaxPages}}
		}
		opts, err := st.StepOptions(r.options)
		if err != nil {
			return nil, err
		}
		w, err := st.Operation.work(opts, in)
		if err != nil {
			return nil, err
		}
		if !st.Intermediate {
			kept += w.Outputs
			// An estimate refuses nothing: a job that makes too many fails as it makes them.
			if r.maxArtifacts > 0 && kept > r.maxArtifacts && in.Counted {
				return nil, OptionRefused("options", "this job would make %d documents; a job holds at most %d", kept, r.maxArtifacts)
			}
		}
		line := PricingLine{Step: st.Name, Operation: st.Operation.Name, Price: st.Operation.Price, Units: st.Operation.Price.Units(w)}
		line.Credits = st.Operation.Price.Cost(w)
		pr.Lines = append(pr.Lines, line)
		pr.Credits += line.Credits
		rules = append(rules, st.Operation.Name+": "+st.Operation.Price.Rule())
		cur = PlanInput{Pages: w.OutPages, Counted: in.Counted}
	}
	pr.Rule = strings.Join(rules, "; ")
	return pr, nil
}

// work plans one run of the operation with canonical options.
func (op *Operation) work(options json.RawMessage, in PlanInput) (Work, error) {
	if op.planFunc == nil {
		return Work{Pages: in.Pages, OutPages: in.Pages}, nil
	}
	v, err := op.DecodeOptions(options)
	if err != nil {
		return Work{}, err
	}
	w, err := op.planFunc(v, in)
	if w.OutPages == 0 {
		w.OutPages = in.Pages // what it passes on has the pages it read
	}
	return w, err
}

// ArtifactNames keeps the names of a job's artifacts apart, so saving them by name
// never overwrites one with another.
type ArtifactNames map[string]bool

// Take returns name, or, when the job has an artifact of that name already, name with
// "-2", "-3", … before its extension.
func (n ArtifactNames) Take(name string) string {
	out := name
	ext := path.Ext(name)
	for i := 2; n[out]; i++ {
		out = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), i, ext)
	}
	n[out] = true
	return out
}

// PriceRule says in words what op costs: an operation's price, or for a preset the sum
// of the steps that run for the file, each with the formats it runs for.
func (op *Operation) PriceRule() string {
	if op.Kind == KindOperation {
		return op.Price.Rule()
	}
	parts := make([]string, 0, len(op.Steps))
	for _, st := range op.Steps {
		s := st.Operation.Name + ": " + st.Operation.Price.Rule()
		if len(st.When) > 0 {
			s += " (for " + strings.Join(st.When, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return "the sum of the steps that run for the file: " + strings.Join(parts, "; ")
}
