package office

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/docstruct"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// ConvertOptions are the options of convert.
type ConvertOptions struct {
	Format string `json:"format,omitempty" doc:"Output format: pdf; txt (plain text); md (Markdown, from text documents, spreadsheets and presentations); png, jpeg or webp (one image per page)." schema:"enum=pdf|png|jpeg|webp|txt|md,default=pdf"`
}

// Output formats.
const (
	FormatPDF  = "pdf"
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
	FormatWebP = "webp"
	FormatTXT  = "txt"
	FormatMD   = "md"
)

// Validate checks the format.
func (o ConvertOptions) Validate() error {
	switch o.Format {
	case "", FormatPDF, FormatPNG, FormatJPEG, FormatWebP, FormatTXT, FormatMD:
		return nil
	}
	return domain.InvalidParam("options.format", "format must be one of pdf, png, jpeg, webp, txt, md")
}

// InputFormats are the inputs convert takes (extensions and families).
var InputFormats = []string{
	"doc", "docx", "odt", "rtf", "xls", "xlsx", "ods", "csv", "ppt", "pptx", "odp",
	"html", "md", "txt", "pdf", "image/*",
}

// Specs declares the operations the engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name:   "convert",
		Engine: EngineName,
		Description: "Converts office documents (doc, docx, odt, rtf, xls, xlsx, ods, csv, ppt, pptx, odp), HTML, " +
			"Markdown and images to PDF with LibreOffice; office documents and PDFs to plain text; text documents, " +
			"spreadsheets (one section per sheet, its first row the header) and presentations (one section per slide) to Markdown; and documents to one image per page. Macros never run and documents " +
			"never fetch remote resources.",
		Options:      ConvertOptions{},
		InputFormats: InputFormats,
		Price:        domain.Price{Credits: 5, Per: "file"},
		Plan:         planConvert,
	}}
}

// planConvert refuses at creation a conversion of the file's kind to a format convert
// does not make from it (a PDF to Markdown, an image to text), naming options.format.
func planConvert(options any, in domain.PlanInput) (domain.Work, error) {
	w := domain.Work{Pages: in.Pages, OutPages: in.Pages}
	if in.Format.MIMEType == "" {
		return w, nil
	}
	o, err := domain.OptionsAs[ConvertOptions](options)
	if err != nil {
		return domain.Work{}, err
	}
	format := o.Format
	if format == "" {
		format = FormatPDF
	}
	if _, k := inputKind(in.Format, in.Filename); !converts(format, k) {
		return domain.Work{}, domain.OptionRefused("options.format", "convert cannot turn %s into %s", kindNames[k], format)
	}
	return w, nil
}

// converts reports whether convert makes format from an input of kind k: the one table
// admission and the run both follow.
func converts(format string, k kind) bool {
	switch format {
	case FormatPDF:
		return k != kindPDF && k != kindUnknown
	case FormatPNG, FormatJPEG, FormatWebP:
		return k != kindImage && k != kindUnknown
	case FormatTXT:
		return k != kindImage && k != kindUnknown
	case FormatMD:
		return k == kindText || k == kindPlain || k == kindHTML || k == kindSheet || k == kindSlides
	}
	return false
}

// kind is what an input is, for choosing the conversion path.
type kind int

const (
	kindUnknown kind = iota
	kindText         // word processing
	kindSheet        // spreadsheet
	kindSlides       // presentation
	kindHTML
	kindMarkdown
	kindPlain
	kindImage
	kindPDF
)

// importFilter maps an input extension to its LibreOffice import filter and kind.
// Naming the filter keeps LibreOffice from guessing: a damaged docx must fail as a
// docx, not be read as plain text.
var importFilter = map[string]struct {
	filter, options string
	kind            kind
}{
	"docx": {"MS Word 2007 XML", "", kindText},
	"doc":  {"MS Word 97", "", kindText},
	"odt":  {"writer8", "", kindText},
	"rtf":  {"Rich Text Format", "", kindText},
	"xlsx": {"Calc MS Excel 2007 XML", "", kindSheet},
	"xls":  {"MS Excel 97", "", kindSheet},
	"ods":  {"calc8", "", kindSheet},
	// Comma-separated, double quotes, UTF-8 (76), from line 1.
	"csv":  {"Text - txt - csv (StarCalc)", "44,34,76,1", kindSheet},
	"pptx": {"Impress MS PowerPoint 2007 XML", "", kindSlides},
	"ppt":  {"MS PowerPoint 97", "", kindSlides},
	"odp":  {"impress8", "", kindSlides},
	"html": {"HTML (StarWriter)", "", kindHTML},
	"txt":  {"Text (encoded)", "UTF8,LF,,,", kindPlain},
}

// inputKind names the input's kind from its detected format; the file name only
// separates the text formats detection cannot tell apart (Markdown, CSV).
func inputKind(f domain.Format, filename string) (string, kind) {
	ext := strings.ToLower(f.Extension)
	nameExt := strings.TrimPrefix(strings.ToLower(filepath.Ext(filename)), ".")
	switch {
	case f.MIMEType == "application/pdf":
		return "pdf", kindPDF
	case strings.HasPrefix(f.MIMEType, "image/") && f.MIMEType != "image/svg+xml":
		return ext, kindImage
	case f.MIMEType == "text/html":
		return "html", kindHTML
	case ext != "txt" && ext != "csv" && importFilter[ext].filter != "":
		return ext, importFilter[ext].kind // rtf is text/rtf, yet no plain text
	case strings.HasPrefix(f.MIMEType, "text/") || ext == "txt":
		switch nameExt {
		case "md", "markdown":
			return "md", kindMarkdown
		case "csv":
			return "csv", kindSheet
		case "html", "htm":
			return "html", kindHTML
		}
		if ext == "csv" {
			return "csv", kindSheet
		}
		return "txt", kindPlain
	case f.MIMEType == "application/x-ole-storage":
		// A password-protected OOXML file, or an unnamed compound file: LibreOffice
		// detects what it is (and asks for a password when it is encrypted).
		switch nameExt {
		case "docx", "doc":
			return "cfb", kindText
		case "xlsx", "xls":
			return "cfb", kindSheet
		case "pptx", "ppt":
			return "cfb", kindSlides
		}
		return "cfb", kindText
	}
	if m, ok := importFilter[ext]; ok {
		return ext, m.kind
	}
	return ext, kindUnknown
}

// Run converts in.Path to options.format.
//
// Errors: unsupported_input for a pair it cannot do or an input over the limits;
// encrypted_file for a password-protected document; corrupted_file for one that
// cannot be read; resource_limit_exceeded for one that needs more memory than
// Config.JobMemoryLimit; output_validation_failed when the output does not verify;
// invalid_request for bad options; other errors (a LibreOffice instance that crashed
// or hung, a full queue) are retryable failures.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if in.Operation != "convert" {
		return nil, fmt.Errorf("office: unknown operation %q", in.Operation)
	}
	opts, err := domain.EngineOptions[ConvertOptions](in)
	if err != nil {
		return nil, err
	}
	if opts.Format == "" {
		opts.Format = FormatPDF
	}
	st, err := os.Stat(in.Path)
	if err != nil {
		return nil, fmt.Errorf("office: input: %w", err)
	}
	if st.Size() > e.cfg.MaxInputBytes {
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "the document is larger than %d bytes", e.cfg.MaxInputBytes)
	}
	ext, k := inputKind(in.Format, in.Filename)
	c := &conversion{e: e, in: in, ext: ext, kind: k, base: domain.OutputStem(in.Filename)}
	return c.run(ctx, opts.Format)
}

type conversion struct {
	e    *Engine
	in   domain.EngineInput
	ext  string
	kind kind
	base string // the download name without extension
}

// kindNames say what an input of each kind is, in messages.
var kindNames = map[kind]string{
	kindText: "a text document", kindSheet: "a spreadsheet", kindSlides: "a presentation",
	kindHTML: "an HTML page", kindMarkdown: "a Markdown file", kindPlain: "a plain text file",
	kindImage: "an image", kindPDF: "a PDF", kindUnknown: "this file type",
}

func unsupported(format string, k kind) error {
	return domain.Errorf(domain.CodeUnsupportedInput, "convert cannot turn %s into %s", kindNames[k], format)
}

func (c *conversion) run(ctx context.Context, format string) (*domain.EngineOutput, error) {
	if !converts(format, c.kind) {
		// A job admitted before its file's format was known.
		return nil, unsupported(format, c.kind)
	}
	switch format {
	case FormatPDF:
		switch c.kind {
		case kindImage:
			return c.imageToPDF(ctx)
		case kindPDF, kindUnknown:
			return nil, unsupported(format, c.kind)
		}
		path, err := c.toPDF(ctx)
		if err != nil {
			return nil, err
		}
		return single(c.base+".pdf", "application/pdf", path), nil
	case FormatTXT:
		return c.toText(ctx)
	case FormatMD:
		return c.toMarkdown(ctx)
	case FormatPNG, FormatJPEG, FormatWebP:
		return c.toImages(ctx, format)
	}
	return nil, unsupported(format, c.kind)
}

func single(name, mime, path string) *domain.EngineOutput {
	return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{{Name: name, MIMEType: mime, Path: path}}}
}

// toPDF converts an office document, HTML, Markdown or plain text to a verified PDF in
// the work directory.
func (c *conversion) toPDF(ctx context.Context) (string, error) {
	src, filter, options, err := c.prepared(ctx)
	if err != nil {
		return "", err
	}
	out := filepath.Join(c.in.WorkDir, c.base+".pdf")
	if err := c.e.lo(ctx, src, out, filter, options, "pdf"); err != nil {
		return "", err
	}
	n, err := c.e.countPDF(ctx, out)
	if err != nil || n < 1 {
		os.Remove(out)
		return "", domain.Errorf(domain.CodeOutputValidationFailed, "the converted PDF does not verify")
	}
	return out, nil
}

// prepared returns the file LibreOffice should read with its import filter: the input
// itself, or for Markdown and HTML a sanitised HTML file in a scratch directory.
func (c *conversion) prepared(ctx context.Context) (path, filter, options string, err error) {
	switch c.kind {
	case kindMarkdown, kindHTML:
		b, err := os.ReadFile(c.in.Path)
		if err != nil {
			return "", "", "", err
		}
		var h []byte
		if c.kind == kindMarkdown {
			h, err = markdownToHTML(b)
		} else {
			h, err = sanitizeHTML(b)
		}
		if err != nil {
			return "", "", "", domain.Errorf(domain.CodeCorruptedFile, "the document cannot be read")
		}
		p, err := c.scratch("page.html")
		if err != nil {
			return "", "", "", err
		}
		if err := os.WriteFile(p, h, 0o600); err != nil {
			return "", "", "", err
		}
		return p, importFilter["html"].filter, "", nil
	case kindUnknown, kindImage, kindPDF:
		return "", "", "", unsupported("pdf", c.kind)
	}
	if err := precheck(c.in.Path, c.ext); err != nil {
		return "", "", "", err
	}
	m := importFilter[c.ext] // zero for "cfb": LibreOffice detects
	return c.in.Path, m.filter, m.options, nil
}

// scratch returns a path in a private subdirectory of the work directory, for
// intermediate files that are not artifacts.
func (c *conversion) scratch(name string) (string, error) {
	dir := filepath.Join(c.in.WorkDir, ".convert")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// lo runs one LibreOffice conversion and maps its refusals to the contract's codes.
// An instance that crashes (or breaks its protocol) on the document may have been
// worn by those before it: the conversion is tried once more on another. A document
// that crashes a second instance as well is the document's fault (corrupted_file),
// and another attempt of the job would only crash a third. One that took its
// instance past its memory bound would do so again on any other: it is not tried
// again.
func (e *Engine) lo(ctx context.Context, in, out, filter, options, to string) error {
	req := request{Op: "convert", In: in, Out: out, Import: filter, ImportOptions: options, To: to}
	_, err := e.pool.convert(ctx, req)
	if crashed(ctx, err) {
		_, err = e.pool.convert(ctx, req)
		if crashed(ctx, err) {
			return fmt.Errorf("%w: %w", domain.Errorf(domain.CodeCorruptedFile, "LibreOffice fails on this document: it crashed reading it twice"), err)
		}
	}
	var de *docError
	switch {
	case domain.ErrorCode(err) == domain.CodeResourceLimitExceeded:
		return domain.AsError(err)
	case errors.As(err, &de):
		switch de.kind {
		case "encrypted":
			return domain.Errorf(domain.CodeEncryptedFile, "the document is password-protected")
		case "corrupted":
			return domain.Errorf(domain.CodeCorruptedFile, "the document cannot be read")
		default:
			return domain.Errorf(domain.CodeUnsupportedInput, "LibreOffice cannot export this document to %s", to)
		}
	case errors.Is(err, runner.ErrRunTimeout):
		return domain.Errorf(domain.CodeTimeout, "the conversion took longer than %s", e.cfg.Timeout)
	case err != nil:
		return fmt.Errorf("office: %w", err)
	}
	if st, serr := os.Stat(out); serr != nil || st.Size() == 0 {
		return domain.Errorf(domain.CodeOutputValidationFailed, "the conversion produced no output")
	}
	return nil
}

// crashed reports whether a conversion ended with its instance crashed or its
// protocol broken, rather than with an answer, its deadline, the caller's or its
// memory bound.
func crashed(ctx context.Context, err error) bool {
	return errors.Is(err, runner.ErrBroken) && !errors.Is(err, runner.ErrRunTimeout) && ctx.Err() == nil &&
		domain.ErrorCode(err) != domain.CodeResourceLimitExceeded
}

// precheck refuses a zip-based document whose container cannot be read: LibreOffice
// would otherwise try to repair it or read it as something else.
func precheck(path, ext string) error {
	switch ext {
	case "docx", "xlsx", "pptx", "odt", "ods", "odp":
	default:
		return nil
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return domain.Errorf(domain.CodeCorruptedFile, "the document cannot be read: its zip container is damaged")
	}
	defer zr.Close()
	if len(zr.File) > 100_000 {
		return domain.Errorf(domain.CodeUnsupportedInput, "the document has too many parts")
	}
	// The sizes its parts declare unpacked, against the structure reader's bounds: one
	// 300 MiB shared string (300 KB packed) costs LibreOffice minutes and gigabytes.
	lim := zipparts.DefaultLimits()
	var total uint64
	for _, f := range zr.File {
		if f.UncompressedSize64 > uint64(lim.MaxPartBytes) {
			return domain.Errorf(domain.CodeUnsupportedInput, "the document's part %s is %s unpacked; convert reads parts of at most %s",
				f.Name, domain.FormatBytes(int64(min(f.UncompressedSize64, 1<<62))), domain.FormatBytes(lim.MaxPartBytes))
		}
		if total += f.UncompressedSize64; total > uint64(lim.MaxTotalBytes) {
			return domain.Errorf(domain.CodeUnsupportedInput, "the document is more than %s unpacked; convert reads at most that",
				domain.FormatBytes(lim.MaxTotalBytes))
		}
	}
	return nil
}

// toText extracts plain text: text documents through LibreOffice's text export, other
// documents and PDFs through pdftotext (reading order, one form feed between pages).
func (c *conversion) toText(ctx context.Context) (*domain.EngineOutput, error) {
	out := filepath.Join(c.in.WorkDir, c.base+".txt")
	switch c.kind {
	case kindText, kindHTML, kindMarkdown, kindPlain:
		src, filter, options, err := c.prepared(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.e.lo(ctx, src, out, filter, options, "txt"); err != nil {
			return nil, err
		}
	case kindSheet, kindSlides, kindPDF:
		pdf := c.in.Path
		if c.kind != kindPDF {
			p, err := c.toPDF(ctx)
			if err != nil {
				return nil, err
			}
			defer os.Remove(p)
			pdf = p
		} else if err := c.e.checkPDF(ctx, pdf); err != nil {
			return nil, err
		}
		lim := runner.Limits{Memory: 2 << 30, CPUTime: c.e.cfg.Timeout, FileSize: c.in.Limits.Disk}
		if m := c.in.Limits.Memory; m > 0 {
			lim.Memory = min(lim.Memory, m)
		}
		if err := runner.Run(ctx, runner.Cmd{
			Path: c.e.cfg.PDFToText, Args: []string{"-enc", "UTF-8", "-layout", pdf, out}, Limits: lim,
		}); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if le := runner.LimitError(err, lim); le != nil {
				return nil, le
			}
			return nil, domain.Errorf(domain.CodeCorruptedFile, "the document's text cannot be read")
		}
	default:
		return nil, unsupported("txt", c.kind)
	}
	if err := cleanText(out); err != nil {
		return nil, err
	}
	return single(c.base+".txt", "text/plain; charset=utf-8", out), nil
}

// cleanText drops the byte order mark LibreOffice writes and verifies UTF-8.
func cleanText(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return domain.Errorf(domain.CodeOutputValidationFailed, "the conversion produced no text file")
	}
	t := bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(t) {
		return domain.Errorf(domain.CodeOutputValidationFailed, "the extracted text is not valid UTF-8")
	}
	if len(t) != len(b) {
		return os.WriteFile(path, t, 0o600)
	}
	return nil
}

// toMarkdown writes spreadsheets and presentations through their own structure (one
// section per sheet or slide: docstruct, which ai-ready reads them with too; legacy
// binary ones converted to their OOXML sibling first), and converts text documents to
// HTML with LibreOffice, then that HTML to Markdown (headings, lists, tables,
// emphasis, links).
func (c *conversion) toMarkdown(ctx context.Context) (*domain.EngineOutput, error) {
	if c.kind == kindSheet || c.kind == kindSlides {
		return c.structureToMarkdown(ctx)
	}
	var h []byte
	switch c.kind {
	case kindHTML:
		b, err := os.ReadFile(c.in.Path)
		if err != nil {
			return nil, err
		}
		h = b
	case kindText, kindPlain:
		if err := precheck(c.in.Path, c.ext); err != nil {
			return nil, err
		}
		m := importFilter[c.ext]
		out, err := c.scratch("export.html")
		if err != nil {
			return nil, err
		}
		if err := c.e.lo(ctx, c.in.Path, out, m.filter, m.options, "html"); err != nil {
			return nil, err
		}
		if h, err = os.ReadFile(out); err != nil {
			return nil, err
		}
	default:
		return nil, unsupported("md", c.kind)
	}
	md, err := htmlToMarkdown(h)
	if err != nil {
		return nil, domain.Errorf(domain.CodeOutputValidationFailed, "the document could not be turned into Markdown")
	}
	out := filepath.Join(c.in.WorkDir, c.base+".md")
	if err := os.WriteFile(out, md, 0o600); err != nil {
		return nil, err
	}
	return single(c.base+".md", "text/markdown; charset=utf-8", out), nil
}

// structureToMarkdown writes a spreadsheet or presentation as Markdown from its own
// structure.
func (c *conversion) structureToMarkdown(ctx context.Context) (*domain.EngineOutput, error) {
	path := c.in.Path
	reader := docstruct.ReaderFor(c.in.Format, c.in.Filename)
	if reader == "" || c.ext == "cfb" {
		// A legacy binary (or unnamed compound) file: its OOXML sibling is read.
		to, r := "xlsx", docstruct.ReaderXLSX
		if c.kind == kindSlides {
			to, r = "pptx", docstruct.ReaderPPTX
		}
		out, err := c.scratch("sibling." + to)
		if err != nil {
			return nil, err
		}
		m := importFilter[c.ext]
		if err := c.e.lo(ctx, c.in.Path, out, m.filter, m.options, to); err != nil {
			return nil, err
		}
		path, reader = out, r
	} else if err := precheck(c.in.Path, c.ext); err != nil {
		return nil, err
	}
	doc, err := docstruct.Read(path, reader, zipparts.DefaultLimits())
	switch {
	case errors.Is(err, zipparts.ErrTooLarge):
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "the document is larger than its structure is read for")
	case err != nil:
		return nil, domain.Errorf(domain.CodeCorruptedFile, "the document cannot be read")
	}
	out := filepath.Join(c.in.WorkDir, c.base+".md")
	if err := os.WriteFile(out, []byte(doc.Markdown()), 0o600); err != nil {
		return nil, err
	}
	return single(c.base+".md", "text/markdown; charset=utf-8", out), nil
}

// toImages converts to PDF (or takes the PDF) and renders each page with the
// platform's renderer.
func (c *conversion) toImages(ctx context.Context, format string) (*domain.EngineOutput, error) {
	if c.e.cfg.RenderPage == nil {
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "image output is not available on this worker")
	}
	var pdf string
	switch c.kind {
	case kindPDF:
		if err := c.e.checkPDF(ctx, c.in.Path); err != nil {
			return nil, err
		}
		pdf = c.in.Path
	case kindImage, kindUnknown:
		return nil, unsupported(format, c.kind)
	default:
		p, err := c.toPDF(ctx)
		if err != nil {
			return nil, err
		}
		defer os.Remove(p)
		pdf = p
	}
	n, err := c.e.countPDF(ctx, pdf)
	if err != nil {
		return nil, err
	}
	if n > c.e.cfg.MaxImagePages {
		return nil, domain.Errorf(domain.CodeUnsupportedInput, "the document has %d pages; image output takes at most %d", n, c.e.cfg.MaxImagePages)
	}
	mime := map[string]string{FormatPNG: "image/png", FormatJPEG: "image/jpeg", FormatWebP: "image/webp"}[format]
	ext := map[string]string{FormatPNG: "png", FormatJPEG: "jpg", FormatWebP: "webp"}[format]
	out := &domain.EngineOutput{}
	for page := 1; page <= n; page++ {
		name := fmt.Sprintf("%s-%d.%s", c.base, page, ext)
		path := filepath.Join(c.in.WorkDir, name)
		if err := c.e.cfg.RenderPage(ctx, pdf, page, c.e.cfg.ImageDPI, format, path); err != nil {
			return nil, fmt.Errorf("office: render page %d: %w", page, err)
		}
		if err := verifyImage(path); err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, domain.EngineArtifact{Name: name, MIMEType: mime, Path: path})
		if c.in.Progress != nil {
			c.in.Progress(page * 100 / n)
		}
	}
	return out, nil
}

func verifyImage(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return domain.Errorf(domain.CodeOutputValidationFailed, "a page image is missing")
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return domain.Errorf(domain.CodeOutputValidationFailed, "a page image does not decode")
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return domain.Errorf(domain.CodeOutputValidationFailed, "a page image is empty")
	}
	return nil
}
