package docstruct

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// Readers by name: what ReaderFor answers.
const (
	ReaderDOCX     = "docx"
	ReaderPPTX     = "pptx"
	ReaderXLSX     = "xlsx"
	ReaderODT      = "odt"
	ReaderODP      = "odp"
	ReaderODS      = "ods"
	ReaderHTML     = "html"
	ReaderMarkdown = "md"
	ReaderCSV      = "csv"
	ReaderText     = "txt"
)

// Paged reports whether documents the reader reads have pages (and so a PDF made
// from them to take pages and boxes from).
func Paged(reader string) bool {
	switch reader {
	case ReaderDOCX, ReaderPPTX, ReaderXLSX, ReaderODT, ReaderODP, ReaderODS:
		return true
	}
	return false
}

// ReaderFor names the reader of a file of detected format f uploaded as filename;
// "" when its structure is not read here (legacy binary formats, RTF, PDFs, images).
// The name only tells apart the text formats detection cannot (Markdown, CSV).
func ReaderFor(f domain.Format, filename string) string {
	ext := strings.ToLower(f.Extension)
	nameExt := strings.TrimPrefix(strings.ToLower(filepath.Ext(filename)), ".")
	switch {
	case ext == "docx" || ext == "pptx" || ext == "xlsx" || ext == "odt" || ext == "odp" || ext == "ods":
		return ext
	case f.MIMEType == "text/html":
		return ReaderHTML
	case ext == "csv" || f.MIMEType == "text/csv":
		return ReaderCSV
	case ext == "rtf" || f.MIMEType == "text/rtf":
		return ""
	case strings.HasPrefix(f.MIMEType, "text/") || ext == "txt":
		switch nameExt {
		case "md", "markdown":
			return ReaderMarkdown
		case "csv":
			return ReaderCSV
		case "html", "htm":
			return ReaderHTML
		}
		return ReaderText
	}
	return ""
}

// ErrUnreadable wraps a document whose container or markup cannot be read.
var ErrUnreadable = errors.New("docstruct: the document cannot be read")

// MaxMarkupBytes bounds the text formats read into memory.
const MaxMarkupBytes = 64 << 20

// Read reads the file at path with the named reader. Errors wrap ErrUnreadable (a
// damaged document) or zipparts.ErrTooLarge (over the limits).
func Read(path, reader string, lim zipparts.Limits) (*Document, error) {
	var (
		d   *Document
		err error
	)
	switch reader {
	case ReaderDOCX:
		d, err = ReadDOCX(path, lim)
	case ReaderPPTX:
		d, err = ReadPPTX(path, lim)
	case ReaderXLSX:
		d, err = ReadXLSX(path, lim)
	case ReaderODT, ReaderODP, ReaderODS:
		d, err = ReadODF(path, lim)
	case ReaderHTML, ReaderMarkdown, ReaderCSV, ReaderText:
		st, serr := os.Stat(path)
		if serr != nil {
			return nil, serr
		}
		if st.Size() > MaxMarkupBytes {
			return nil, fmt.Errorf("%w: %d bytes of text", zipparts.ErrTooLarge, st.Size())
		}
		src, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, rerr
		}
		switch reader {
		case ReaderHTML:
			d, err = ReadHTML(strings.NewReader(string(src)))
		case ReaderMarkdown:
			d = ReadMarkdown(src)
		case ReaderCSV:
			d, err = ReadCSV(src)
		default:
			d = ReadText(src)
		}
	default:
		return nil, fmt.Errorf("docstruct: no reader %q", reader)
	}
	if err != nil {
		if errors.Is(err, zipparts.ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return d, nil
}
