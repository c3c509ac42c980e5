package aiready

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/docstruct"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
	"github.com/filemill/filemill/jobs/ops/pagetext"
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

// DefaultMaxTokens is max_tokens when none is given.
const DefaultMaxTokens = 512

// Options are ai.extract's options; the ai-ready preset passes them on.
type Options struct {
	ChunkSize     int    `json:"chunk_size,omitempty" doc:"The most characters a chunk of chunks.json holds. Chunks split on headings, then paragraphs, never inside a table row." schema:"min=200,max=100000,default=2000"`
	MaxTokens     int    `json:"max_tokens,omitempty" doc:"The most tokens a chunk holds (its embed_text with contextualize), counted with tokenizer." schema:"min=32,max=16384,default=512"`
	OverlapTokens int    `json:"overlap_tokens,omitempty" doc:"Tokens of the chunk before repeated at the start of a chunk that carries on the same section's text (never inside a table). Less than half of max_tokens." schema:"min=0,max=4096,default=0"`
	MergeSmall    bool   `json:"merge_small,omitempty" doc:"Let neighbours under the same heading share a chunk while it fits, rather than each heading starting one." schema:"default=false"`
	Contextualize bool   `json:"contextualize,omitempty" doc:"Give each chunk embed_text: its heading path, then its text, the text meant for embedding." schema:"default=false"`
	CrossSections bool   `json:"cross_sections,omitempty" doc:"Let a chunk span two top-level sections (the document's outermost headings, slides, sheets)." schema:"default=false"`
	Tokenizer     string `json:"tokenizer,omitempty" doc:"The BPE vocabulary tokens are counted with." schema:"enum=cl100k_base|o200k_base,default=cl100k_base"`
}

// Validate checks the rules across options.
func (o Options) Validate() error {
	if o.MaxTokens > 0 && o.OverlapTokens*2 >= o.MaxTokens {
		return domain.InvalidParam("options.overlap_tokens", "overlap_tokens must be less than half of max_tokens")
	}
	return nil
}

func (o *Options) defaults() {
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Tokenizer == "" {
		o.Tokenizer = TokenizerCL100K
	}
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
		Description: "Reads a document's structure (headings, lists, tables, reading order; running headers, footers and page numbers dropped) " +
			"into document.md, document.txt and chunks.json: office documents, HTML, Markdown and CSV through their own format, PDFs " +
			"from their layout. Pages without a text layer are recognised by OCR.",
		Options:      Options{},
		InputFormats: InputFormats,
		Price:        domain.Price{Credits: 1, Per: domain.PerPage},
		Hidden:       true,
	}}
}

// InputFormats are what the extraction reads itself: PDFs, and the formats without
// pages read through their own structure. Office documents reach it as the PDF the
// preset's convert step made, their own structure read from the job's file; a DOCX
// that carries its pages (PagedByItself) as the file itself.
var InputFormats = []string{"pdf", "html", "txt", "csv", "text/markdown"}

// ExtractStep is the ai-ready preset's last step: the extraction, storing its three
// artifacts, reading the PDF the steps before it passed on (or the file itself).
func ExtractStep() domain.StepSpec {
	return domain.StepSpec{Name: "extract", Operation: Operation}
}

// Preset returns the ai-ready preset: before (the steps that turn other inputs into a
// PDF, each with its When and Intermediate set), then the extraction. Its input
// formats are PDF and whatever the steps before take.
func Preset(before ...domain.StepSpec) domain.PresetSpec {
	formats := slices.Clone(InputFormats)
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
			"footers or page numbers), document.txt, and chunks.json (chunks of at most max_tokens tokens and chunk_size characters " +
			"with their pages, boxes, heading path, token count and elements).",
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
// memory bounds what recognising the page may take, in bytes (0: no bound).
type OCRFunc func(ctx context.Context, pdfPath string, page int, memory int64) (*pagetext.Page, error)

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
// Close releases nothing: the PDFium pool and the OCR engine are the caller's.
func (e *Engine) Close() error { return nil }

func (e *Engine) Version() string { return "layout 1; " + e.cfg.Pool.Version() }

// Check reads a built-in page's text: nil when PDFium works here. OCR is the OCR
// engine's to check.
func (e *Engine) Check(ctx context.Context) error { return e.cfg.Pool.Check(ctx) }

// batchPages is how many pages' text is read at once: it bounds the memory held in
// per-character boxes, which are dropped once a page is reduced to its segments.
const batchPages = 64

// batches are pages 1..n in groups of batchPages.
func batches(n int) [][]int {
	var out [][]int
	for first := 1; first <= n; first += batchPages {
		batch := make([]int, 0, batchPages)
		for p := first; p < first+batchPages && p <= n; p++ {
			batch = append(batch, p)
		}
		out = append(out, batch)
	}
	return out
}

// Run extracts the document's structure into document.md, document.txt and
// chunks.json: through the job's file's own format where it is read here (pages and
// boxes from in.Path when that is a PDF made from it), else from in.Path's PDF layout.
//
// Errors: invalid_request (options), encrypted_file, corrupted_file, unsupported_input
// (limits; a page without text and no OCR; an input that is no PDF and not read
// here), output_validation_failed, ctx's error.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if in.Operation != Operation {
		return nil, &domain.Error{Code: domain.CodeUnsupportedOperation, Message: fmt.Sprintf("the ai engine does not serve %s", in.Operation)}
	}
	o, err := domain.EngineOptions[Options](in)
	if err != nil {
		return nil, err
	}
	o.defaults()
	ch, err := newChunker(o)
	if err != nil {
		return nil, err
	}

	doc, err := e.structure(ctx, in)
	if err != nil {
		return nil, err
	}
	md, txt := doc.Markdown(), doc.Text()
	chunks := ch.chunks(doc)

	mdPath := filepath.Join(in.WorkDir, MarkdownName)
	txtPath := filepath.Join(in.WorkDir, TextName)
	chPath := filepath.Join(in.WorkDir, ChunksName)
	cj, err := json.MarshalIndent(ChunksFile{ChunkSize: o.ChunkSize, MaxTokens: o.MaxTokens, OverlapTokens: o.OverlapTokens,
		Tokenizer: o.Tokenizer, Pages: doc.Pages, Chunks: chunks}, "", "  ")
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
	if err := verify(chPath, o); err != nil {
		return nil, err
	}
	return &domain.EngineOutput{Units: max(doc.Pages, 1), Artifacts: []domain.EngineArtifact{
		// A document without text (blank pages, or scans recognition found nothing on)
		// is read in full: its text is empty, and so are these.
		{Name: MarkdownName, MIMEType: "text/markdown; charset=utf-8", Path: mdPath, MayBeEmpty: true},
		{Name: TextName, MIMEType: "text/plain; charset=utf-8", Path: txtPath, MayBeEmpty: true},
		{Name: ChunksName, MIMEType: "application/json", Path: chPath},
	}}, nil
}

// structure reads the document: the job's file through its own format when it is
// read here (a PDF made from it giving pages and boxes), else the PDF's layout.
func (e *Engine) structure(ctx context.Context, in domain.EngineInput) (*docstruct.Document, error) {
	src := in.Source
	if src.Path == "" {
		src = domain.EngineFile{Path: in.Path, Filename: in.Filename, Format: in.Format}
	}
	isPDF := sniffPDF(in.Path)
	if reader := docstruct.ReaderFor(src.Format, src.Filename); reader != "" && !(src.Path == in.Path && isPDF) {
		doc, err := docstruct.Read(src.Path, reader, zipparts.DefaultLimits())
		switch {
		case err == nil:
			if n := docChars(doc); n > e.cfg.MaxChars {
				return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the document holds more than %d characters of text", e.cfg.MaxChars)}
			}
			switch {
			case isPDF && docstruct.Paged(reader):
				words, n, err := e.words(ctx, in)
				if err != nil {
					return nil, err
				}
				docstruct.Locate(doc, words, n)
			case doc.Pages > e.cfg.MaxPages:
				return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the document has %d pages; at most %d are read", doc.Pages, e.cfg.MaxPages)}
			case in.Progress != nil:
				in.Progress(100)
			}
			return doc, nil
		case errors.Is(err, zipparts.ErrTooLarge):
			return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: "the document is larger than its structure is read for"}
		case !isPDF:
			return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: "the document cannot be read"}
		}
		// A document its own format cannot be read from is read from the PDF made of it.
	}
	if !isPDF {
		if in.Format.MIMEType == "application/pdf" || strings.EqualFold(filepath.Ext(in.Filename), ".pdf") {
			return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF cannot be read"}
		}
		return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: "ai.extract reads PDFs, office documents, HTML, Markdown, CSV and text"}
	}
	pages, err := e.read(ctx, in)
	if err != nil {
		return nil, err
	}
	return analyze(pages).structure(len(pages)), nil
}

// PagedByItself reports whether the file is a document the extraction finds every
// element's page in without a PDF made from it: a DOCX carrying the page breaks its
// application laid it out with, as many as the pages it recorded (Word writes
// them on every save; LibreOffice does not). The ai-ready preset leaves out its
// conversion for such a file: its chunks have pages (page_source "hints") but no
// boxes. A file that cannot be read is not.
func PagedByItself(f domain.EngineFile) bool {
	if docstruct.ReaderFor(f.Format, f.Filename) != docstruct.ReaderDOCX {
		return false
	}
	return docstruct.PagedDOCX(f.Path, zipparts.DefaultLimits())
}

// sniffPDF reports whether the file at path starts like a PDF.
func sniffPDF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte("%PDF-"))
}

func docChars(d *docstruct.Document) int {
	n := 0
	for _, b := range d.Blocks {
		n += len(b.Text)
		for _, r := range b.Rows {
			for _, c := range r {
				n += len(c)
			}
		}
	}
	return n
}

// words reads the words of the PDF at in.Path, page after page, with their boxes;
// n is its page count.
func (e *Engine) words(ctx context.Context, in domain.EngineInput) ([]docstruct.Word, int, error) {
	d, err := e.cfg.Pool.Open(ctx, in.Path)
	if err != nil {
		return nil, 0, err
	}
	defer d.Close()
	n := d.PageCount()
	if n > e.cfg.MaxPages {
		return nil, 0, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the document has %d pages; at most %d are read", n, e.cfg.MaxPages)}
	}
	var out []docstruct.Word
	for _, batch := range batches(n) {
		texts, err := d.TextPages(ctx, batch, nil)
		if err != nil {
			return nil, 0, err
		}
		for _, pt := range texts {
			out = append(out, pageWords(pt)...)
		}
		if in.Progress != nil {
			in.Progress(batch[len(batch)-1] * 100 / n)
		}
	}
	return out, n, nil
}

// pageWords splits a page's runs into words at spaces, each with its characters' box.
func pageWords(pt *pagetext.Page) []docstruct.Word {
	var out []docstruct.Word
	var b strings.Builder
	var box pagetext.Rect
	flush := func() {
		if b.Len() > 0 {
			out = append(out, docstruct.Word{Text: b.String(), Box: docstruct.Box{Page: pt.Page, X0: box.X0, Y0: box.Y0, X1: box.X1, Y1: box.Y1}})
		}
		b.Reset()
	}
	for _, r := range pt.Runs {
		for _, c := range r.Chars {
			if unicode.IsSpace(c.Rune) || c.Rune == 0 {
				flush()
				continue
			}
			if b.Len() == 0 {
				box = c.Box
			} else {
				box = rect{X0: math.Min(box.X0, c.Box.X0), Y0: math.Min(box.Y0, c.Box.Y0), X1: math.Max(box.X1, c.Box.X1), Y1: math.Max(box.Y1, c.Box.Y1)}
			}
			b.WriteRune(c.Rune)
		}
		flush()
	}
	return out
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
	for _, batch := range batches(n) {
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
	memory := in.Limits.MemoryShare(min(e.cfg.OCRWorkers, len(scans)))
	err = parallel(ctx, len(scans), e.cfg.OCRWorkers, func(ctx context.Context, i int) error {
		pt, err := e.cfg.OCRPage(ctx, in.Path, scans[i], memory)
		if err != nil {
			return err
		}
		if pt == nil {
			pt = &pagetext.Page{Page: scans[i]}
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
func hasText(pt *pagetext.Page) bool {
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
	ChunkSize     int    `json:"chunk_size"`
	MaxTokens     int    `json:"max_tokens"`
	OverlapTokens int    `json:"overlap_tokens"`
	Tokenizer     string `json:"tokenizer"`
	// Pages is the page count of the document (of the PDF made from it); 0 for
	// documents without pages.
	Pages  int     `json:"pages"`
	Chunks []Chunk `json:"chunks"`
}

// verify reads chunks.json back: it parses and every chunk keeps to its bounds.
func verify(path string, o Options) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("aiready: %w", err)
	}
	var f ChunksFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "chunks.json does not parse"}
	}
	for _, c := range f.Chunks {
		if n := utf8.RuneCountInString(c.Text); n > o.ChunkSize || n != c.Characters || c.Tokens > o.MaxTokens || c.Tokens < 1 {
			return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "a chunk of chunks.json breaks its own bounds"}
		}
	}
	return nil
}
