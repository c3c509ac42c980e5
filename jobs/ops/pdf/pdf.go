package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/pagerange"
	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

// EngineName is the engine family: its queue and its unit of availability.
const EngineName = "pdf"

// MergeOptions are pdf.merge's options.
type MergeOptions struct {
	FileIDs []string `json:"file_ids" doc:"The PDFs to append after this one, in order (ids of files of the same project)." schema:"required,minItems=1,maxItems=100"`
}

// Rotation turns pages by a multiple of 90 degrees, clockwise.
type Rotation struct {
	Pages string `json:"pages" doc:"Pages to turn, as ranges such as \"1-3,7,9-\"." schema:"required"`
	Angle int    `json:"angle" doc:"Clockwise angle in degrees." schema:"required,enum=90|180|270"`
}

// PagesOptions are pdf.pages' options. Page numbers always refer to the input.
type PagesOptions struct {
	Pages  string     `json:"pages,omitempty" doc:"Pages to keep, in the order written, as ranges such as \"3,1-2,9-\" (select and reorder; default all in order)."`
	Rotate []Rotation `json:"rotate,omitempty" doc:"Pages to turn and by how much." schema:"maxItems=100"`
	Delete string     `json:"delete,omitempty" doc:"Pages to remove, as ranges such as \"2,5-6\"."`
}

// SplitOptions are pdf.split's options: exactly one of ranges and every.
type SplitOptions struct {
	Ranges []string `json:"ranges,omitempty" doc:"One part per entry, each a page selection such as \"1-3\" or \"4,6-\"." schema:"minItems=1,maxItems=1000"`
	Every  *int     `json:"every,omitempty" doc:"Split into parts of this many pages (the last may be shorter)." schema:"min=1,max=100000"`
}

// CompressOptions are pdf.compress' options.
type CompressOptions struct {
	Level string `json:"level,omitempty" doc:"low keeps images at up to 300 dpi, medium at 150 dpi, high at 96 dpi with stronger JPEG compression." schema:"enum=low|medium|high,default=medium"`
}

// Validate checks page-selection syntax.
func (o PagesOptions) Validate() error {
	if o.Pages == "" && o.Delete == "" && len(o.Rotate) == 0 {
		return domain.InvalidParam("options", "give at least one of pages, rotate and delete")
	}
	if err := checkSelection("options.pages", o.Pages); err != nil {
		return err
	}
	if err := checkSelection("options.delete", o.Delete); err != nil {
		return err
	}
	for i, r := range o.Rotate {
		param := fmt.Sprintf("options.rotate[%d]", i)
		if r.Pages == "" {
			return domain.InvalidParam(param+".pages", "say which pages to turn")
		}
		if err := checkSelection(param+".pages", r.Pages); err != nil {
			return err
		}
		if r.Angle != 90 && r.Angle != 180 && r.Angle != 270 {
			return domain.InvalidParam(param+".angle", "angle must be 90, 180 or 270")
		}
	}
	return nil
}

// Validate checks that exactly one way of splitting is given.
func (o SplitOptions) Validate() error {
	switch {
	case len(o.Ranges) > 0 && o.Every != nil:
		return domain.InvalidParam("options.every", "give ranges or every, not both")
	case len(o.Ranges) == 0 && o.Every == nil:
		return domain.InvalidParam("options.ranges", "give ranges or every")
	case o.Every != nil && *o.Every < 1:
		return domain.InvalidParam("options.every", "every must be at least 1")
	}
	for i, r := range o.Ranges {
		if err := checkSelection(fmt.Sprintf("options.ranges[%d]", i), r); err != nil {
			return err
		}
		if r == "" {
			return domain.InvalidParam(fmt.Sprintf("options.ranges[%d]", i), "a part needs at least one page")
		}
	}
	return nil
}

// Validate checks the merge list.
func (o MergeOptions) Validate() error {
	if len(o.FileIDs) < 1 || len(o.FileIDs) > 100 {
		return domain.InvalidParam("options.file_ids", "list 1 to 100 files to append")
	}
	return nil
}

func checkSelection(param, s string) error {
	if s == "" {
		return nil
	}
	if _, err := pagerange.Parse(s); err != nil {
		return domain.InvalidParam(param, "%s", err.Error())
	}
	return nil
}

// Specs lists the operations this engine serves.
func Specs() []domain.OperationSpec {
	spec := func(name, desc string, opts any) domain.OperationSpec {
		return domain.OperationSpec{Name: name, Engine: EngineName, Description: desc, Options: opts,
			InputFormats: []string{"pdf"}, Price: domain.Price{Credits: 1, Per: domain.PerFile}}
	}
	merge := spec("pdf.merge", "Appends other PDFs of the project after this one, in the order given.", MergeOptions{})
	merge.FileIDsOption = "file_ids"
	pages := spec("pdf.pages", "Keeps, reorders, rotates and deletes pages; page numbers refer to the input.", PagesOptions{})
	pages.Plan = planPages
	split := spec("pdf.split", "Splits a PDF into parts by page ranges or every N pages, one artifact per part; priced per part.", SplitOptions{})
	split.Price, split.Plan = domain.Price{Credits: 1, Per: domain.PerOutput}, planSplit
	return []domain.OperationSpec{
		merge,
		pages,
		split,
		spec("pdf.compress", "Makes a PDF smaller: images down-sampled and re-encoded per level, objects deduplicated and streams compressed; never larger than the input. A report gives the bytes before and after.", CompressOptions{}),
	}
}

// Config bounds the engine's work. Zero fields take the defaults.
type Config struct {
	// MaxPages refuses documents (inputs and results) with more pages.
	MaxPages int
	// MaxInputBytes refuses larger input files (each of a merge's inputs).
	MaxInputBytes int64
	// MaxStreamBytes bounds one stream, encoded or decoded (pdfcpu's limits).
	MaxStreamBytes int64
	// MaxImagePixels: larger embedded images are left as they are by pdf.compress.
	MaxImagePixels int64
	// Workers is how many images pdf.compress re-encodes at once; default GOMAXPROCS.
	Workers int
	// Logger receives the libraries' own messages (never shown to clients).
	Logger *slog.Logger
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		MaxPages:       10_000,
		MaxInputBytes:  2 << 30,
		MaxStreamBytes: 512 << 20,
		MaxImagePixels: 100_000_000,
		Workers:        runtime.GOMAXPROCS(0),
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.MaxPages < 0:
		return errors.New("pdf: MaxPages must not be negative")
	case c.MaxInputBytes < 0:
		return errors.New("pdf: MaxInputBytes must not be negative")
	case c.MaxStreamBytes < 0:
		return errors.New("pdf: MaxStreamBytes must not be negative")
	case c.MaxImagePixels < 0:
		return errors.New("pdf: MaxImagePixels must not be negative")
	case c.Workers < 0:
		return errors.New("pdf: Workers must not be negative")
	}
	return nil
}

// Engine runs the PDF operations. It is safe for concurrent use.
type Engine struct {
	cfg Config
	log *slog.Logger
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

var _ domain.Engine = (*Engine)(nil)

// New returns the engine.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := DefaultConfig()
	if cfg.MaxPages == 0 {
		cfg.MaxPages = d.MaxPages
	}
	if cfg.MaxInputBytes == 0 {
		cfg.MaxInputBytes = d.MaxInputBytes
	}
	if cfg.MaxStreamBytes == 0 {
		cfg.MaxStreamBytes = d.MaxStreamBytes
	}
	if cfg.MaxImagePixels == 0 {
		cfg.MaxImagePixels = d.MaxImagePixels
	}
	if cfg.Workers == 0 {
		cfg.Workers = d.Workers
	}
	log := cfg.Logger
	if log == nil {
		log = discard
	}
	return &Engine{cfg: cfg, log: log}, nil
}

// Close releases nothing: the engine holds no resource between runs (libvips is
// process-wide).
func (e *Engine) Close() error { return nil }

// Version is the PDF library's version (and the image codec's, for compress).
func (e *Engine) Version() string {
	return "pdfcpu " + model.VersionStr + ", libvips " + vips.Version()
}

// Check verifies the engine works here: pdfcpu reads and writes a built-in PDF and
// libvips re-encodes an image.
func (e *Engine) Check(ctx context.Context) error {
	if err := vips.Init(); err != nil {
		return err
	}
	if _, err := vips.RawToJPEG(make([]byte, 16*16*3), 16, 16, 3, 8, 8, 80); err != nil {
		return fmt.Errorf("pdf: check: %w", err)
	}
	return checkRoundTrip(ctx, e)
}

// Run dispatches on in.Operation.
//
// Errors: invalid_request with param (options, or pages the document lacks),
// encrypted_file, corrupted_file, unsupported_input (limits), output_validation_failed,
// ctx's error.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch in.Operation {
	case "pdf.merge":
		o, err := domain.EngineOptions[MergeOptions](in)
		if err != nil {
			return nil, err
		}
		return e.merge(ctx, in, o)
	case "pdf.pages":
		o, err := domain.EngineOptions[PagesOptions](in)
		if err != nil {
			return nil, err
		}
		return e.pages(ctx, in, o)
	case "pdf.split":
		o, err := domain.EngineOptions[SplitOptions](in)
		if err != nil {
			return nil, err
		}
		return e.split(ctx, in, o)
	case "pdf.compress":
		o, err := domain.EngineOptions[CompressOptions](in)
		if err != nil {
			return nil, err
		}
		return e.compress(ctx, in, o)
	}
	return nil, &domain.Error{Code: domain.CodeUnsupportedOperation, Message: fmt.Sprintf("the pdf engine does not serve %s", in.Operation)}
}

const pdfMIME = "application/pdf"
