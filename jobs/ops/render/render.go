package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/pagerange"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

// EngineName is the engine family: its queue and its unit of availability.
const EngineName = "render"

// Options are pdf.render's options.
type Options struct {
	Pages  string `json:"pages,omitempty" doc:"Pages to render, as ranges such as \"1-3,7,9-\" (9- is 9 to the end); default all. A page listed twice is rendered once."`
	Format string `json:"format,omitempty" doc:"Image format of each page." schema:"enum=png|jpeg|webp,default=png"`
	DPI    *int   `json:"dpi,omitempty" doc:"Resolution in pixels per inch; 72 renders a Letter page at 612×792. Default 72 when width is not given." schema:"min=18,max=600"`
	Width  *int   `json:"width,omitempty" doc:"Width of each image in pixels, the height following the page's aspect ratio. Give dpi or width, not both." schema:"min=16,max=10000"`
}

// Validate checks the rules across fields.
func (o Options) Validate() error {
	if o.DPI != nil && o.Width != nil {
		return domain.InvalidParam("options.width", "give dpi or width, not both")
	}
	if o.Pages != "" {
		if _, err := pagerange.Parse(o.Pages); err != nil {
			return domain.InvalidParam("options.pages", "%s", err.Error())
		}
	}
	return nil
}

// Specs lists the operations this engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name:         "pdf.render",
		Engine:       EngineName,
		Description:  "Renders PDF pages to PNG, JPEG or WebP images, one artifact per page; priced per page rendered.",
		Options:      Options{},
		InputFormats: []string{"pdf"},
		Price:        domain.Price{Credits: 1, Per: domain.PerPage},
		Plan:         plan,
		// Rendering is cheap per page; a run past this is an input built to be costly.
		Timeout: 2 * time.Minute,
	}}
}

// Config configures the engine. Zero fields take the defaults.
type Config struct {
	// Pool is the PDFium pool shared with other engines; nil starts one from PDFium.
	Pool *pdfium.Pool
	// PDFium configures the pool started when Pool is nil.
	PDFium pdfium.Config
	// JPEGQuality and WebPQuality are the encoders' quality (1–100); default 85 and 80.
	JPEGQuality, WebPQuality int
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	return Config{PDFium: pdfium.DefaultConfig(), JPEGQuality: 85, WebPQuality: 80}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.JPEGQuality < 0 || c.JPEGQuality > 100 {
		return errors.New("render: JPEGQuality must be between 1 and 100")
	}
	if c.WebPQuality < 0 || c.WebPQuality > 100 {
		return errors.New("render: WebPQuality must be between 1 and 100")
	}
	if c.Pool == nil {
		return c.PDFium.Validate()
	}
	return nil
}

// Engine renders PDF pages. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	pool    *pdfium.Pool
	ownPool bool
}

var _ domain.Engine = (*Engine)(nil)

// New returns the engine; PDFium starts on first use or in Check.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := DefaultConfig()
	if cfg.JPEGQuality == 0 {
		cfg.JPEGQuality = d.JPEGQuality
	}
	if cfg.WebPQuality == 0 {
		cfg.WebPQuality = d.WebPQuality
	}
	e := &Engine{cfg: cfg, pool: cfg.Pool}
	if e.pool == nil {
		p, err := pdfium.New(cfg.PDFium)
		if err != nil {
			return nil, err
		}
		e.pool, e.ownPool = p, true
	}
	return e, nil
}

// Version is the rasteriser's version.
func (e *Engine) Version() string { return e.pool.Version() }

// Check renders a built-in page: nil when PDFium and libvips work here.
func (e *Engine) Check(ctx context.Context) error { return e.pool.Check(ctx) }

// Close stops the engine's own pool (a shared one belongs to whoever made it).
func (e *Engine) Close() error {
	if e.ownPool {
		return e.pool.Close()
	}
	return nil
}

var formats = map[string]struct{ ext, mime, magic string }{
	"png":  {"png", "image/png", "\x89PNG\r\n\x1a\n"},
	"jpeg": {"jpg", "image/jpeg", "\xff\xd8\xff"},
	"webp": {"webp", "image/webp", "RIFF"},
}

// Run renders the selected pages of in.Path into in.WorkDir.
//
// Errors: invalid_request (options, or pages the document lacks; param names the
// option), encrypted_file, corrupted_file, unsupported_input (limits), ctx's error.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if in.Operation != "pdf.render" {
		return nil, &domain.Error{Code: domain.CodeUnsupportedOperation, Message: fmt.Sprintf("the render engine does not serve %s", in.Operation)}
	}
	o, err := domain.EngineOptions[Options](in)
	if err != nil {
		return nil, err
	}
	if o.Format == "" {
		o.Format = "png"
	}
	f, ok := formats[o.Format]
	if !ok {
		return nil, domain.InvalidParam("options.format", "format must be png, jpeg or webp")
	}
	ro := pdfium.ImageOptions{Format: o.Format, Quality: e.cfg.JPEGQuality}
	if o.Format == "webp" {
		ro.Quality = e.cfg.WebPQuality
	}
	switch {
	case o.Width != nil:
		ro.Width = *o.Width
	case o.DPI != nil:
		ro.DPI = float64(*o.DPI)
	default:
		ro.DPI = 72
	}

	doc, err := e.pool.Open(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	defer doc.Close()
	pages, err := selectPages(o.Pages, doc.PageCount(), e.pool.Config().MaxPages)
	if err != nil {
		return nil, err
	}
	stem := domain.OutputStem(in.Filename)
	width := len(fmt.Sprint(doc.PageCount()))
	name := func(p int) string { return fmt.Sprintf("%s-page-%0*d.%s", stem, width, p, f.ext) }
	progress := func(done, total int) {
		if in.Progress != nil {
			in.Progress(done * 100 / total)
		}
	}
	res, err := doc.RenderPages(ctx, pages, ro, func(p int) string { return filepath.Join(in.WorkDir, name(p)) }, progress)
	if err != nil {
		return nil, err
	}
	out := &domain.EngineOutput{Units: len(res)}
	for _, r := range res {
		if err := verify(r.Path, f.magic); err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, domain.EngineArtifact{Name: name(r.Page), MIMEType: f.mime, Path: r.Path})
	}
	return out, nil
}

func selectPages(sel string, count, limit int) ([]int, error) {
	if count == 0 {
		return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF has no pages"}
	}
	if sel == "" {
		all := make([]int, count)
		for i := range all {
			all[i] = i + 1
		}
		return all, nil
	}
	s, err := pagerange.Parse(sel)
	if err == nil {
		var pages []int
		if pages, err = s.Pages(count, limit); err == nil {
			return pagerange.Unique(pages), nil
		}
	}
	return nil, domain.InvalidParam("options.pages", "%s", err.Error())
}

// verify checks an image file is there and starts as its format does.
func verify(path, magic string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(magic))
	if _, err := f.Read(head); err != nil || !bytes.Equal(head, []byte(magic)) {
		return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "a rendered page is not a valid image"}
	}
	return nil
}
