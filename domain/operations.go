package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Price is what an operation costs: Credits per file, or per page for page-wise work.
type Price struct {
	Credits int64  `json:"credits"`
	Per     string `json:"per"` // "file" or "page"
}

// Option describes one option of an operation; it renders as a JSON schema property.
type Option struct {
	Name        string
	Type        string // string, integer, number, boolean, array (of strings)
	Description string
	Enum        []string
	Min, Max    *float64
	MaxItems    int
	Default     any
}

// Operation is an operation or a preset of the registry.
type Operation struct {
	Name        string
	Kind        string // "operation" or "preset"
	Description string
	Engine      string   // the engine that runs it (for a preset: the engines of its steps)
	Steps       []string // for presets: the operations it runs, in order
	Price       Price
	// InputFormats lists accepted inputs: extensions, MIME types or families ("image/*");
	// "*" accepts anything.
	InputFormats []string
	Options      []Option
}

func num(f float64) *float64 { return &f }

var officeInputs = []string{"docx", "doc", "xlsx", "xls", "pptx", "ppt", "odt", "ods", "odp", "rtf", "txt", "csv", "html"}
var imageInputs = []string{"image/*"}

// Operations is the registry: every operation and preset the contract names.
var Operations = []*Operation{
	{Name: "inspect", Kind: "operation", Engine: "inspect", Price: Price{1, "file"}, InputFormats: []string{"*"},
		Description: "Reports the detected format, size, hash and per-format facts (PDF pages, version, encryption, text layer; image size, orientation, colour space; office document type)."},
	{Name: "scan", Kind: "operation", Engine: "scan", Price: Price{1, "file"}, InputFormats: []string{"*"},
		Description: "Scans for malware with ClamAV and built-in checks; a finding fails the job with malware_detected."},
	{Name: "convert", Kind: "operation", Engine: "office", Price: Price{5, "file"}, InputFormats: officeInputs,
		Description: "Converts office documents to PDF (or another office format) with LibreOffice.",
		Options:     []Option{{Name: "to", Type: "string", Enum: []string{"pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "txt", "html"}, Default: "pdf", Description: "target format"}}},
	{Name: "ocr", Kind: "operation", Engine: "ocr", Price: Price{2, "page"}, InputFormats: append([]string{"pdf"}, imageInputs...),
		Description: "Recognises text in scans and images with tesseract.",
		Options: []Option{
			{Name: "language", Type: "string", Enum: []string{"eng"}, Default: "eng", Description: "tesseract language"},
			{Name: "output", Type: "string", Enum: []string{"text", "pdf"}, Default: "text", Description: "plain text, or a searchable PDF"}}},
	{Name: "pdf.merge", Kind: "operation", Engine: "pdf", Price: Price{1, "file"}, InputFormats: []string{"pdf"},
		Description: "Appends other PDFs of the project to this one.",
		Options:     []Option{{Name: "file_ids", Type: "array", MaxItems: 99, Description: "the files to append, in order"}}},
	{Name: "pdf.pages", Kind: "operation", Engine: "pdf", Price: Price{1, "file"}, InputFormats: []string{"pdf"},
		Description: "Keeps, reorders or rotates pages.",
		Options: []Option{
			{Name: "pages", Type: "string", Description: "page selection, e.g. 1-3,5"},
			{Name: "rotate", Type: "integer", Enum: []string{"0", "90", "180", "270"}, Description: "rotation in degrees"}}},
	{Name: "pdf.split", Kind: "operation", Engine: "pdf", Price: Price{1, "file"}, InputFormats: []string{"pdf"},
		Description: "Splits a PDF into parts of span pages.",
		Options:     []Option{{Name: "span", Type: "integer", Min: num(1), Max: num(10000), Default: 1, Description: "pages per part"}}},
	{Name: "pdf.compress", Kind: "operation", Engine: "pdf", Price: Price{1, "file"}, InputFormats: []string{"pdf"},
		Description: "Optimises a PDF: removes redundancy, recompresses streams."},
	{Name: "pdf.render", Kind: "operation", Engine: "render", Price: Price{1, "page"}, InputFormats: []string{"pdf"},
		Description: "Renders PDF pages to images.",
		Options: []Option{
			{Name: "format", Type: "string", Enum: []string{"png", "jpeg", "webp"}, Default: "png", Description: "image format"},
			{Name: "dpi", Type: "integer", Min: num(36), Max: num(600), Default: 150, Description: "resolution"},
			{Name: "pages", Type: "string", Description: "page selection, e.g. 1-3,5 (default: all)"}}},
	{Name: "image.convert", Kind: "operation", Engine: "image", Price: Price{1, "file"}, InputFormats: imageInputs,
		Description: "Converts, resizes and strips images with libvips.",
		Options: []Option{
			{Name: "format", Type: "string", Enum: []string{"jpeg", "png", "webp", "avif", "tiff", "gif"}, Default: "webp", Description: "output format"},
			{Name: "quality", Type: "integer", Min: num(1), Max: num(100), Default: 80, Description: "lossy quality"},
			{Name: "width", Type: "integer", Min: num(1), Max: num(16384), Description: "target width in pixels"},
			{Name: "height", Type: "integer", Min: num(1), Max: num(16384), Description: "target height in pixels"},
			{Name: "fit", Type: "string", Enum: []string{"contain", "cover", "fill"}, Default: "contain", Description: "how to fit width×height"},
			{Name: "strip", Type: "boolean", Default: true, Description: "drop metadata"}}},

	{Name: "ai-ready", Kind: "preset", Steps: []string{"inspect", "ocr"}, Price: Price{3, "page"}, InputFormats: append(append([]string{"pdf"}, officeInputs...), imageInputs...),
		Description: "Text and markdown for LLM pipelines: office documents converted, scans recognised."},
	{Name: "document", Kind: "preset", Steps: []string{"convert", "pdf.compress"}, Price: Price{6, "file"}, InputFormats: append([]string{"pdf"}, officeInputs...),
		Description: "A compact PDF of any document."},
	{Name: "image", Kind: "preset", Steps: []string{"image.convert"}, Price: Price{1, "file"}, InputFormats: imageInputs,
		Description: "A web-ready WebP of any image, metadata stripped."},
	{Name: "avatar", Kind: "preset", Steps: []string{"image.convert"}, Price: Price{1, "file"}, InputFormats: imageInputs,
		Description: "A square 256×256 WebP cropped to cover."},
	{Name: "inspect", Kind: "preset", Steps: []string{"inspect"}, Price: Price{1, "file"}, InputFormats: []string{"*"},
		Description: "The inspect operation as a preset."},
}

// Presets lists the preset names of the contract.
var Presets = []string{"ai-ready", "document", "image", "avatar", "inspect"}

// FindOperation returns the operation (kind "operation") or preset (kind "preset").
func FindOperation(name, kind string) *Operation {
	for _, op := range Operations {
		if op.Name == name && op.Kind == kind {
			return op
		}
	}
	return nil
}

// Engines names the engines an operation or preset needs.
func (op *Operation) Engines() []string {
	if op.Kind == "operation" {
		return []string{op.Engine}
	}
	var out []string
	for _, s := range op.Steps {
		if e := FindOperation(s, "operation"); e != nil && !slices.Contains(out, e.Engine) {
			out = append(out, e.Engine)
		}
	}
	return out
}

// Accepts reports whether the operation takes a file of this format.
func (op *Operation) Accepts(f Format) bool {
	for _, e := range op.InputFormats {
		if e == "*" || FormatMatches(f, e) {
			return true
		}
	}
	return false
}

// ValidateOptions checks options against the operation's schema and returns them in
// canonical form (defaults filled in). Codes: invalid_request with param options.NAME.
func (op *Operation) ValidateOptions(raw json.RawMessage) (json.RawMessage, error) {
	opts := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&opts); err != nil {
			return nil, InvalidParam("options", "options must be a JSON object")
		}
	}
	known := map[string]Option{}
	for _, o := range op.Options {
		known[o.Name] = o
	}
	names := make([]string, 0, len(opts))
	for k := range opts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		o, ok := known[k]
		if !ok {
			if len(op.Options) == 0 {
				return nil, InvalidParam("options."+k, "%s %s takes no options", op.Kind, op.Name)
			}
			return nil, InvalidParam("options."+k, "unknown option %q for %s (known: %s)", k, op.Name, strings.Join(optionNames(op), ", "))
		}
		v, err := o.check(opts[k])
		if err != nil {
			return nil, err
		}
		opts[k] = v
	}
	for _, o := range op.Options {
		if _, set := opts[o.Name]; !set && o.Default != nil {
			opts[o.Name] = o.Default
		}
	}
	return json.Marshal(opts)
}

func optionNames(op *Operation) []string {
	out := make([]string, 0, len(op.Options))
	for _, o := range op.Options {
		out = append(out, o.Name)
	}
	return out
}

func (o Option) check(v any) (any, error) {
	param := "options." + o.Name
	bad := func(format string, args ...any) error { return InvalidParam(param, format, args...) }
	switch o.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, bad("%s must be a string", o.Name)
		}
		if len(s) > 1000 {
			return nil, bad("%s is too long", o.Name)
		}
		if len(o.Enum) > 0 && !slices.Contains(o.Enum, s) {
			return nil, bad("%s must be one of %s", o.Name, strings.Join(o.Enum, ", "))
		}
		return s, nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, bad("%s must be true or false", o.Name)
		}
		return b, nil
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad("%s must be a number", o.Name)
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, bad("%s must be a number", o.Name)
		}
		if o.Type == "integer" && f != math.Trunc(f) {
			return nil, bad("%s must be an integer", o.Name)
		}
		if o.Min != nil && f < *o.Min || o.Max != nil && f > *o.Max {
			return nil, bad("%s must be between %g and %g", o.Name, deref(o.Min, math.Inf(-1)), deref(o.Max, math.Inf(1)))
		}
		if len(o.Enum) > 0 && !slices.Contains(o.Enum, n.String()) {
			return nil, bad("%s must be one of %s", o.Name, strings.Join(o.Enum, ", "))
		}
		if o.Type == "integer" {
			return int64(f), nil
		}
		return f, nil
	case "array":
		items, ok := v.([]any)
		if !ok {
			return nil, bad("%s must be an array of strings", o.Name)
		}
		if o.MaxItems > 0 && len(items) > o.MaxItems {
			return nil, bad("%s takes at most %d items", o.Name, o.MaxItems)
		}
		for _, it := range items {
			if _, ok := it.(string); !ok {
				return nil, bad("%s must be an array of strings", o.Name)
			}
		}
		return items, nil
	}
	return nil, fmt.Errorf("option %s has unknown type %s", o.Name, o.Type)
}

func deref(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}

// Schema renders the options as a JSON schema object.
func (op *Operation) Schema() map[string]any {
	props := map[string]any{}
	for _, o := range op.Options {
		p := map[string]any{"type": o.Type, "description": o.Description}
		if o.Type == "array" {
			p["items"] = map[string]any{"type": "string"}
			if o.MaxItems > 0 {
				p["maxItems"] = o.MaxItems
			}
		}
		if len(o.Enum) > 0 {
			if o.Type == "integer" {
				var ints []int
				for _, e := range o.Enum {
					var n int
					fmt.Sscan(e, &n)
					ints = append(ints, n)
				}
				p["enum"] = ints
			} else {
				p["enum"] = o.Enum
			}
		}
		if o.Min != nil {
			p["minimum"] = *o.Min
		}
		if o.Max != nil {
			p["maximum"] = *o.Max
		}
		if o.Default != nil {
			p["default"] = o.Default
		}
		props[o.Name] = p
	}
	return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
}

// OperationView is the operation object of GET /v1/operations.
type OperationView struct {
	Object        string         `json:"object"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind"`
	Description   string         `json:"description"`
	Available     bool           `json:"available"`
	Engine        string         `json:"engine"`
	Price         Price          `json:"price"`
	InputFormats  []string       `json:"input_formats"`
	OptionsSchema map[string]any `json:"options_schema"`
}

// View returns the operation's representation given the engines this deployment runs.
func (op *Operation) View(available func(engine string) bool) OperationView {
	ok := true
	for _, e := range op.Engines() {
		ok = ok && available(e)
	}
	return OperationView{Object: "operation", Name: op.Name, Kind: op.Kind, Description: op.Description, Available: ok,
		Engine: strings.Join(op.Engines(), "+"), Price: op.Price, InputFormats: op.InputFormats, OptionsSchema: op.Schema()}
}
