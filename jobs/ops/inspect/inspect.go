package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/filemill/filemill/domain"
)

// ArtifactName is the report's download name; ArtifactMIMEType its type.
const (
	ArtifactName     = "inspect.json"
	ArtifactMIMEType = "application/json"
)

// Config bounds what one inspection may read. Zero fields take the defaults.
type Config struct {
	// MaxPixels is the largest width×height reported without the exceeds_pixel_limit
	// flag. Inspect only reads headers, so it flags rather than refuses.
	MaxPixels int64
	// MaxPages is how many PDF pages the text-layer scan may visit; a document with more
	// pages is flagged exceeds_page_limit.
	MaxPages int
	// MaxXMLBytes is the most decompressed bytes read from any one XML part of an office
	// document (zip-bomb safety); a larger part is skipped and listed in skipped_parts.
	MaxXMLBytes int64
	// MaxZipEntries is the most entries an office container may have before it is
	// refused as corrupted.
	MaxZipEntries int
}

// DefaultConfig returns the limits used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		MaxPixels:     100_000_000,
		MaxPages:      10_000,
		MaxXMLBytes:   16 << 20,
		MaxZipEntries: 10_000,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.MaxPixels < 0:
		return errors.New("inspect: MaxPixels must not be negative")
	case c.MaxPages < 0:
		return errors.New("inspect: MaxPages must not be negative")
	case c.MaxXMLBytes < 0:
		return errors.New("inspect: MaxXMLBytes must not be negative")
	case c.MaxZipEntries < 0:
		return errors.New("inspect: MaxZipEntries must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxPixels <= 0 {
		c.MaxPixels = d.MaxPixels
	}
	if c.MaxPages <= 0 {
		c.MaxPages = d.MaxPages
	}
	if c.MaxXMLBytes <= 0 {
		c.MaxXMLBytes = d.MaxXMLBytes
	}
	if c.MaxZipEntries <= 0 {
		c.MaxZipEntries = d.MaxZipEntries
	}
	return c
}

// Engine is the inspect engine. It is safe for concurrent use.
type Engine struct {
	cfg Config
}

var _ domain.Engine = (*Engine)(nil)

// New returns an inspect engine; zero limits take their defaults.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg.withDefaults()}, nil
}

// Close releases nothing: the engine holds no resource between runs.
func (e *Engine) Close() error { return nil }

// Report is the content of inspect.json. Its shape is part of the public contract:
// add fields, never rename or remove them. Exactly one of the per-format sections is
// present when the format belongs to that family; other formats get the common fields.
type Report struct {
	Filename string        `json:"filename"`
	Format   domain.Format `json:"format"`
	ByteSize int64         `json:"byte_size"`
	// SHA256 is null when the file was too large to hash on upload.
	SHA256 *string `json:"sha256"`

	PDF    *PDFReport    `json:"pdf,omitempty"`
	Image  *ImageReport  `json:"image,omitempty"`
	Office *OfficeReport `json:"office,omitempty"`
	Text   *TextReport   `json:"text,omitempty"`
}

// PDFReport describes a PDF. Fields that cannot be read without the user password are
// null (page_count when the page tree sits in an encrypted object stream, text_layer).
type PDFReport struct {
	PageCount *int   `json:"page_count"`
	Version   string `json:"version"` // "1.7", "2.0"
	Encrypted bool   `json:"encrypted"`
	// RequiresPassword is true when the document cannot be opened without a user
	// password (an encrypted file with only an owner password opens freely).
	RequiresPassword bool `json:"requires_password"`
	// TextLayer is true when at least one page shows text in a font (a BT/ET block with
	// Tj, TJ, ' or " after Tf), so text can be extracted without OCR; null when unknown
	// (encrypted, or no text found before the page limit).
	TextLayer *bool `json:"text_layer"`
	// PageSize is the first page's size in points as displayed (MediaBox, rotated).
	PageSize         *PageSize `json:"page_size"`
	ExceedsPageLimit bool      `json:"exceeds_page_limit"`
	Title            string    `json:"title,omitempty"`
	Author           string    `json:"author,omitempty"`
	Producer         string    `json:"producer,omitempty"`
}

// PageSize is a page's size in PostScript points (1/72 inch).
type PageSize struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// ImageReport describes a raster image from its headers alone.
type ImageReport struct {
	// Width and Height are the image as it is displayed: its EXIF orientation applied
	// (swapped for orientations 5–8, a quarter turn), as viewers and the other engines
	// show it.
	Width  int `json:"width"`
	Height int `json:"height"`
	// StoredWidth and StoredHeight are the pixel grid as the file stores it, before
	// the orientation is applied.
	StoredWidth  int `json:"stored_width"`
	StoredHeight int `json:"stored_height"`
	// Megapixels is width×height / 1,000,000.
	Megapixels float64 `json:"megapixels"`
	// ExceedsPixelLimit flags images larger than the configured pixel limit: other
	// engines refuse to decode them.
	ExceedsPixelLimit bool `json:"exceeds_pixel_limit"`
	// Orientation is the EXIF orientation (1–8); 1 when absent.
	Orientation int `json:"orientation"`
	// ColorSpace is one of "srgb", "gray", "cmyk", "ycck", "ycbcr", "paletted".
	ColorSpace string `json:"color_space"`
	// BitDepth is bits per sample (per palette index for paletted images); omitted when
	// not known from the headers.
	BitDepth int `json:"bit_depth,omitempty"`
	// Frames is the frame count of GIF and WebP files (1 for a still WebP).
	Frames int `json:"frames,omitempty"`
}

// Document types reported in OfficeReport.DocumentType.
const (
	DocumentWordProcessing = "word_processing"
	DocumentSpreadsheet    = "spreadsheet"
	DocumentPresentation   = "presentation"
	DocumentDrawing        = "drawing"
)

// OfficeReport describes an OOXML or ODF document. Counts come from the document's own
// parts; pages and words are what the authoring application recorded.
type OfficeReport struct {
	DocumentType string `json:"document_type,omitempty"`
	Application  string `json:"application,omitempty"`
	Pages        *int   `json:"pages,omitempty"`
	Words        *int   `json:"words,omitempty"`
	Sheets       *int   `json:"sheets,omitempty"`
	Slides       *int   `json:"slides,omitempty"`
	// Encrypted is true for a password-protected OOXML file, which is a compound file
	// (CFB) holding an EncryptedPackage stream rather than a zip.
	Encrypted bool `json:"encrypted"`
	// SkippedParts lists XML parts left unread because they exceed MaxXMLBytes; the
	// fields they would give are absent.
	SkippedParts []string `json:"skipped_parts,omitempty"`
}

// TextReport describes a text file.
type TextReport struct {
	// Encoding is "utf-8" (also for ASCII), "utf-16le" or "utf-16be" (by byte order
	// mark), or "unknown" when the bytes are not valid UTF-8.
	Encoding string `json:"encoding"`
	// LineCount counts lines as an editor shows them: "a\nb" and "a\nb\n" both have 2.
	// LF, CRLF and a lone CR each end a line.
	LineCount int64 `json:"line_count"`
	// CharCount counts characters (Unicode code points; an invalid byte counts as one),
	// without the byte order mark.
	CharCount int64 `json:"char_count"`
}

// Run inspects in.Path and writes inspect.json into in.WorkDir.
//
// Errors: corrupted_file when the file is a PDF, image or office document whose
// structure cannot be read; ctx's error when it ends first; others are I/O failures.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(in.Path)
	if err != nil {
		return nil, fmt.Errorf("inspect: open input: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("inspect: stat input: %w", err)
	}

	r := &Report{Filename: in.Filename, Format: in.Format, ByteSize: st.Size()}
	if in.SHA256 != "" {
		sum := in.SHA256
		r.SHA256 = &sum
	}

	if err := e.inspectFormat(ctx, source{f: f, size: st.Size(), progress: in.Progress}, in.Format, r); err != nil {
		// A cancelled read surfaces as whatever the parser made of it: report the
		// cancellation, never a corrupted file.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("inspect: %w", ctxErr)
		}
		return nil, err
	}

	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("inspect: encode report: %w", err)
	}
	path := filepath.Join(in.WorkDir, ArtifactName)
	if err := os.WriteFile(path, append(out, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("inspect: write report: %w", err)
	}
	return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{
		{Name: ArtifactName, MIMEType: ArtifactMIMEType, Path: path},
	}}, nil
}

// inspectFormat fills the report's section for the format's family.
func (e *Engine) inspectFormat(ctx context.Context, src source, f domain.Format, r *Report) (err error) {
	defer func() {
		// The parsers (pdfcpu above all) read hostile bytes and some signal malformed
		// input by panicking: such a file fails its own job, never the worker.
		if p := recover(); p != nil {
			err = corrupted("file", fmt.Errorf("parser failure: %v", p))
		}
	}()
	switch family(f) {
	case familyPDF:
		r.PDF, err = e.inspectPDF(ctx, src)
	case familyImage:
		r.Image, err = e.inspectImage(ctx, src, f)
	case familyOffice:
		r.Office, err = e.inspectOffice(ctx, src, f)
	case familyCFB:
		r.Office, err = e.inspectCFB(ctx, src)
	case familyText:
		r.Text, err = inspectText(ctx, src)
	}
	return err
}

// source is the open input with its size, for readers that need both (zip, pdfcpu).
type source struct {
	f    *os.File
	size int64
	// progress is told the share of the input read so far (0–100) by the parts that
	// stream through it; nil when nobody asks.
	progress func(percent int)
}

type formatFamily int

const (
	familyOther formatFamily = iota
	familyPDF
	familyImage
	familyOffice
	familyCFB
	familyText
)

// imageMIMETypes are the raster formats whose headers the registered decoders read;
// other image/* types (SVG, HEIC, AVIF, ICO) get the common fields only.
var imageMIMETypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
	"image/tiff": true, "image/bmp": true, "image/x-bmp": true, "image/x-ms-bmp": true,
}

var officeExtensions = map[string]bool{
	"docx": true, "xlsx": true, "pptx": true, "odt": true, "ods": true, "odp": true, "odg": true,
}

func family(f domain.Format) formatFamily {
	switch {
	case f.MIMEType == "application/pdf":
		return familyPDF
	case imageMIMETypes[f.MIMEType]:
		return familyImage
	case officeExtensions[f.Extension]:
		return familyOffice
	// A password-protected OOXML file is a compound file with no class id, which
	// detection names x-ole-storage; legacy .doc/.xls/.ppt carry their own types.
	case f.MIMEType == "application/x-ole-storage":
		return familyCFB
	case strings.HasPrefix(f.MIMEType, "text/"):
		return familyText
	}
	return familyOther
}

// corruptedMessages are what a client reads when a file's structure cannot be read, by
// kind of file. The parser's own words (`page tree: pageDict: missing "Count"`) mean
// nothing to a person and name internals: they go to the error's cause, for the logs.
var corruptedMessages = map[string]string{
	"PDF":             "the PDF is damaged or incomplete: its structure cannot be read",
	"image":           "the image is damaged or incomplete: its header cannot be read",
	"office document": "the office document is damaged or incomplete: its contents cannot be read",
	"file":            "the file is damaged or incomplete and cannot be read",
}

// corrupted returns the corrupted_file error for a file whose structure cannot be read.
func corrupted(kind string, cause error) error {
	msg, ok := corruptedMessages[kind]
	if !ok {
		msg = corruptedMessages["file"]
	}
	return &domain.Error{Code: domain.CodeCorruptedFile, Message: msg, Cause: cause}
}

// Specs declares the operation the engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name: "inspect", Engine: "inspect", Price: domain.Price{Credits: 1, Per: "file"}, InputFormats: []string{"*"},
		Description: "Reports the detected format, size, hash and per-format facts (PDF pages, version, encryption, text layer; image size as displayed (EXIF orientation applied) and as stored, orientation, colour space; office document type).",
	}}
}

// Version names the engine's release: it is part of filemill.
func (e *Engine) Version() string { return "1" }

// Check reports nothing missing: inspect needs no tool beyond filemill itself.
func (e *Engine) Check(context.Context) error { return nil }
