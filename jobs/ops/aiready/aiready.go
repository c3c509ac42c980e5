// Package aiready is the engine of the ai-ready preset's last step (ai.extract): a PDF
// turned into markdown that keeps its structure (headings and their levels, lists,
// tables as pipe tables, reading order across columns, no running headers, footers
// or page numbers), the same as plain text, and chunks for retrieval.
//
// Text is read from the PDF's text layer with PDFium (jobs/ops/pdfium: runs with
// positions, font sizes and weights, and the page's rules); pages without a text
// layer are recognised by the OCR function the worker plugs in. Layout is read from
// geometry alone: no model, no network.
package aiready

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

// EngineName is the engine family: its queue and its unit of availability.
const EngineName = "ai"

// Operation is the extraction's operation name; it runs only as a preset step.
const Operation = "ai.extract"

// PresetName is the preset whose last step is the extraction.
const PresetName = "ai-ready"

// DefaultChunkSize is chunk_size when none is given.
const DefaultChunkSize = 2000

// Options are ai.extract's options; the ai-ready preset passes chunk_size on.
type Options struct {
	ChunkSize int `json:"chunk_size,omitempty" doc:"The most characters a chunk of chunks.json holds. Chunks split on headings, then paragraphs, never inside a table row." schema:"min=200,max=100000,default=2000"`
}

// PresetOptions are the ai-ready preset's own options, handed to its extraction step.
type PresetOptions = Options

// Artifact names.
const (
	MarkdownName = "document.md"
	TextName     = "document.txt"
	ChunksName   = "chunks.json"
)

// Specs lists the operations this engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name:   Operation,
		Engine: EngineName,
		Description: "Reads a PDF's structure (headings, lists, tables, reading order; running headers, footers and page numbers dropped) " +
			"into document.md, document.txt and chunks.json. Pages without a text layer are recognised by OCR.",
		Options:      Options{},
		InputFormats: []string{"pdf"},
		Price:        domain.Price{Credits: 1, Per: domain.PerPage},
		Hidden:       true,
	}}
}

// ExtractStep is the ai-ready preset's last step: the extraction, storing its three
// artifacts, reading the PDF the steps before it passed on (or the file itself).
func ExtractStep() domain.StepSpec {
	return domain.StepSpec{Name: "extract", Operation: Operation}
}

// Preset returns the ai-ready preset: before (the steps that turn other inputs into a
// PDF, each with its When and Intermediate set), then the extraction. Its input
// formats are PDF and whatever the steps before take.
func Preset(before ...domain.StepSpec) domain.PresetSpec {
	formats := []string{"pdf"}
	for _, s := range before {
		for _, f := range s.When {
			if !slices.Contains(formats, f) {
				formats = append(formats, f)
			}
		}
	}
	return domain.PresetSpec{
		Name: PresetName,
		Description: "For LLM and RAG pipelines: document.md (headings, lists, tables, reading order; no running headers, " +
			"footers or page numbers), document.txt, and chunks.json (chunks of at most chunk_size characters with their pages and heading path).",
		InputFormats: formats,
		Options:      PresetOptions{},
		Steps:        append(slices.Clone(before), ExtractStep()),
	}
}

// OCRFunc recognises page (1-based) of the PDF at pdfPath, which has no text layer,
// and returns its words as runs, one word (or one line) a run: Box the word's box as
// recognised (hugging its ink) in points on the page, origin top-left, y down;
// FontSize its size in points when the recogniser knows it, else 0 (it is then
// estimated from the box and the letters); Width and Height the page's size in
// points. Errors are *domain.Error for the page's faults, or ctx's error.
type OCRFunc func(ctx context.Context, pdfPath string, page int) (*pdfium.PageText, error)

// Config configures the engine.
type Config struct {
	// Pool is the PDFium pool the worker shares between engines; required.
	Pool *pdfium.Pool
	// OCRPage recognises pages without a text layer; nil: such a page fails the job
	// with unsupported_input (a blank page needs no OCR).
	OCRPage OCRFunc
	// OCRWorkers is how many pages are recognised at once; default GOMAXPROCS.
	OCRWorkers int
	// MaxPages refuses longer documents (unsupported_input). Default 2,000.
	MaxPages int
	// MaxChars refuses documents with more text, in characters (unsupported_input).
	// Default 20 million.
	MaxChars int
}

// DefaultConfig returns the settings used when nothing is configured (Pool aside).
func DefaultConfig() Config {
	return Config{OCRWorkers: runtime.GOMAXPROCS(0), MaxPages: 2000, MaxChars: 20_000_000}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("aiready: Pool is required (the worker's shared PDFium pool)")
	case c.OCRWorkers < 0:
		return errors.New("aiready: OCRWorkers must not be negative")
	case c.MaxPages < 0:
		return errors.New("aiready: MaxPages must not be negative")
	case c.MaxChars < 0:
		return errors.New("aiready: MaxChars must not be negative")
	}
	return nil
}

// Engine extracts structure from PDFs. It is safe for concurrent use.
type Engine struct{ cfg Config }

var _ domain.Engine = (*Engine)(nil)

// New returns the engine.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := DefaultConfig()
	if cfg.OCRWorkers == 0 {
		cfg.OCRWorkers = d.OCRWorkers
	}
	if cfg.MaxPages == 0 {
		cfg.MaxPages = d.MaxPages
	}
	if cfg.MaxChars == 0 {
		cfg.MaxChars = d.MaxChars
	}
	return &Engine{cfg: cfg}, nil
}

// MaxPages is the longest PDF the engine reads (its own limit or its PDFium pool's);
// workers announce it, so longer documents are refused when the job is created.
func (e *Engine) MaxPages() int { return min(e.cfg.MaxPages, e.cfg.Pool.Config().MaxPages) }

var _ domain.PageLimitedEngine = (*Engine)(nil)

// Version names the text engine.
func (e *Engine) Version() string { return "layout 1; " + e.cfg.Pool.Version() }

// Check reads a built-in page's text: nil when PDFium works here. OCR is the OCR
// engine's to check.
func (e *Engine) Check(ctx context.Context) error { return e.cfg.Pool.Check(ctx) }

// batchPages is how many pages' text is read at once: it bounds the memory held in
// per-character boxes, which are dropped once a page is reduced to its segments.
const batchPages = 64

// Run extracts in.Path's structure into document.md, document.txt and chunks.json.
//
// Errors: invalid_request (options), encrypted_file, corrupted_file, unsupported_input
// (limits; a page without text and no OCR), output_validation_failed, ctx's error.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if in.Operation != Operation {
		return nil, &domain.Error{Code: domain.CodeUnsupportedOperation, Message: fmt.Sprintf("the ai engine does not serve %s", in.Operation)}
	}
	var o Options
	if len(in.Options) > 0 {
		if err := json.Unmarshal(in.Options, &o); err != nil {
			return nil, domain.InvalidParam("options", "the options cannot be read: %v", err)
		}
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.ChunkSize < 200 || o.ChunkSize > 100_000 {
		return nil, domain.InvalidParam("options.chunk_size", "chunk_size must be between 200 and 100000")
	}

	pages, err := e.read(ctx, in)
	if err != nil {
		return nil, err
	}
	doc := analyze(pages)
	md, txt := doc.markdown(), doc.text()
	chunks := doc.chunks(o.ChunkSize)

	mdPath := filepath.Join(in.WorkDir, MarkdownName)
	txtPath := filepath.Join(in.WorkDir, TextName)
	chPath := filepath.Join(in.WorkDir, ChunksName)
	cj, err := json.MarshalIndent(ChunksFile{ChunkSize: o.ChunkSize, Pages: len(pages), Chunks: chunks}, "", "  ")
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{mdPath, []byte(md)}, {txtPath, []byte(txt)}, {chPath, cj}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, fmt.Errorf("aiready: write %s: %w", filepath.Base(f.path), err)
		}
	}
	if err := verify(chPath, o.ChunkSize); err != nil {
		return nil, err
	}
	return &domain.EngineOutput{Units: len(pages), Artifacts: []domain.EngineArtifact{
		{Name: MarkdownName, MIMEType: "text/markdown; charset=utf-8", Path: mdPath},
		{Name: TextName, MIMEType: "text/plain; charset=utf-8", Path: txtPath},
		{Name: ChunksName, MIMEType: "application/json", Path: chPath},
	}}, nil
}

// read reduces every page to its segments and rules: from the text layer, or by OCR
// for pages that have none.
func (e *Engine) read(ctx context.Context, in domain.EngineInput) ([]*pageData, error) {
	d, err := e.cfg.Pool.Open(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	n := d.PageCount()
	if n == 0 {
		d.Close()
		return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF has no pages"}
	}
	if n > e.cfg.MaxPages {
		d.Close()
		return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the PDF has %d pages; at most %d are read", n, e.cfg.MaxPages)}
	}
	var (
		mu    sync.Mutex
		done  int
		chars int
	)
	tick := func() {
		mu.Lock()
		done++
		if in.Progress != nil {
			in.Progress(done * 100 / n)
		}
		mu.Unlock()
	}
	pages := make([]*pageData, n)
	var scans []int
	for first := 1; first <= n; first += batchPages {
		batch := make([]int, 0, batchPages)
		for p := first; p < first+batchPages && p <= n; p++ {
			batch = append(batch, p)
		}
		texts, err := d.TextPages(ctx, batch, nil)
		if err != nil {
			d.Close()
			return nil, err
		}
		for _, pt := range texts {
			if !hasText(pt) && (pt.Images > 0 || pt.Paths >= scanPaths) {
				scans = append(scans, pt.Page)
				continue
			}
			pages[pt.Page-1] = newPageData(pt, false)
			chars += pages[pt.Page-1].chars
			tick()
		}
		if chars > e.cfg.MaxChars {
			d.Close()
			return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the PDF holds more than %d characters of text", e.cfg.MaxChars)}
		}
	}
	// OCR renders pages on the pool itself: the document's instance is given back first.
	d.Close()
	if len(scans) == 0 {
		return pages, nil
	}
	if e.cfg.OCRPage == nil {
		return nil, &domain.Error{Code: domain.CodeUnsupportedInput,
			Message: fmt.Sprintf("page %d has no text layer and text recognition is not available here", scans[0])}
	}
	err = parallel(ctx, len(scans), e.cfg.OCRWorkers, func(ctx context.Context, i int) error {
		pt, err := e.cfg.OCRPage(ctx, in.Path, scans[i])
		if err != nil {
			return err
		}
		if pt == nil {
			pt = &pdfium.PageText{Page: scans[i]}
		}
		pt.Page = scans[i]
		pd := newPageData(pt, true)
		mu.Lock()
		pages[scans[i]-1] = pd
		chars += pd.chars
		over := chars > e.cfg.MaxChars
		mu.Unlock()
		if over {
			return &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the PDF holds more than %d characters of text", e.cfg.MaxChars)}
		}
		tick()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pages, nil
}

// scanPaths is how many path objects make a page without text worth recognising
// (text drawn as outlines); fewer are a drawing or a blank page.
const scanPaths = 200

// hasText reports whether the page's text layer has any visible character.
func hasText(pt *pdfium.PageText) bool {
	for _, r := range pt.Runs {
		for _, c := range r.Text {
			if c > ' ' && c != 0xA0 {
				return true
			}
		}
	}
	return false
}

// parallel runs fn(0..n-1) on up to workers goroutines, stopping at the first error.
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		next     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if firstErr != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// ChunksFile is chunks.json.
type ChunksFile struct {
	ChunkSize int     `json:"chunk_size"`
	Pages     int     `json:"pages"`
	Chunks    []Chunk `json:"chunks"`
}

// Chunk is one piece of the document for retrieval.
type Chunk struct {
	Index int `json:"index"`
	// Text is the chunk's markdown.
	Text string `json:"text"`
	// Characters is Text's length in characters (Unicode code points).
	Characters int `json:"characters"`
	// Pages are the 1-based pages the chunk's text comes from, ascending.
	Pages []int `json:"pages"`
	// HeadingPath is the headings the chunk falls under, outermost first.
	HeadingPath []string `json:"heading_path"`
}

// verify reads chunks.json back: it parses and every chunk keeps to the size.
func verify(path string, size int) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("aiready: %w", err)
	}
	var f ChunksFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "chunks.json does not parse"}
	}
	for _, c := range f.Chunks {
		if n := utf8.RuneCountInString(c.Text); n > size || n != c.Characters || len(c.Pages) == 0 {
			return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "a chunk of chunks.json breaks its own bounds"}
		}
	}
	return nil
}
