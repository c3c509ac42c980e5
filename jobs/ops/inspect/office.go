package inspect

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// errPartTooLarge marks an XML part over MaxXMLBytes: the part is skipped, not the file.
var errPartTooLarge = errors.New("part too large")

// inspectOffice reads an OOXML or ODF zip container: the document type from the
// detected format, the application and statistics from the document properties, and
// sheet and slide counts from the document's own parts.
func (e *Engine) inspectOffice(ctx context.Context, src source, f domain.Format) (*OfficeReport, error) {
	// Count the entries from the end-of-central-directory record before archive/zip
	// allocates one struct per entry.
	n, err := zipparts.EntryCount(src.f, src.size)
	if err != nil {
		return nil, err
	}
	if n > uint64(e.cfg.MaxZipEntries) {
		return nil, tooManyEntries(n, e.cfg.MaxZipEntries)
	}
	zr, err := zip.NewReader(src.f, src.size)
	// Entry names are only looked up here, never used as paths: "insecure" ones are fine.
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, corrupted("office document", err)
	}
	if len(zr.File) > e.cfg.MaxZipEntries {
		return nil, tooManyEntries(len(zr.File), e.cfg.MaxZipEntries)
	}
	o := &officeReader{ctx: ctx, maxBytes: e.cfg.MaxXMLBytes, parts: map[string]*zip.File{}, rep: &OfficeReport{}}
	for _, zf := range zr.File {
		if _, dup := o.parts[zf.Name]; !dup { // the first of duplicate names wins, as in Office
			o.parts[zf.Name] = zf
		}
	}

	switch f.Extension {
	case "docx":
		o.rep.DocumentType = DocumentWordProcessing
		err = o.ooxmlApp(true)
	case "xlsx":
		o.rep.DocumentType = DocumentSpreadsheet
		if err = o.ooxmlApp(false); err == nil {
			var n int
			if n, err = o.countElements(o.ooxmlMainPart("xl/workbook.xml"), "sheets", "sheet"); n >= 0 {
				o.rep.Sheets = &n
			}
		}
	case "pptx":
		o.rep.DocumentType = DocumentPresentation
		err = o.ooxmlApp(false)
		n := 0
		for name := range o.parts {
			if slidePart.MatchString(name) {
				n++
			}
		}
		o.rep.Slides = &n
	case "odt":
		o.rep.DocumentType = DocumentWordProcessing
		_, err = o.odfMeta(true)
	case "ods":
		o.rep.DocumentType = DocumentSpreadsheet
		err = o.odfCount(func(n int) { o.rep.Sheets = &n }, "spreadsheet", "table", "table-count")
	case "odp":
		o.rep.DocumentType = DocumentPresentation
		err = o.odfCount(func(n int) { o.rep.Slides = &n }, "presentation", "page", "page-count")
	case "odg":
		o.rep.DocumentType = DocumentDrawing
		err = o.odfCount(func(n int) { o.rep.Pages = &n }, "drawing", "page", "page-count")
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, corrupted("office document", err)
	}
	return o.rep, nil
}

var slidePart = regexp.MustCompile(`^ppt/slides/slide[0-9]+\.xml$`)

type officeReader struct {
	ctx      context.Context
	maxBytes int64
	parts    map[string]*zip.File
	rep      *OfficeReport
	rels     map[string]string // package relationships, read once
}

// open returns a part's decompressed stream, limited to maxBytes+1 so an overrun is
// seen. A part declaring more than maxBytes is skipped unopened.
func (o *officeReader) open(name string) (io.ReadCloser, *countingReader, error) {
	zf := o.parts[name]
	if zf == nil {
		return nil, nil, nil
	}
	if zf.UncompressedSize64 > uint64(o.maxBytes) {
		o.skip(name)
		return nil, nil, errPartTooLarge
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return rc, &countingReader{r: io.LimitReader(rc, o.maxBytes+1), max: o.maxBytes}, nil
}

func (o *officeReader) skip(name string) {
	o.rep.SkippedParts = append(o.rep.SkippedParts, name)
}

// decode runs fn over the tokens of one XML part. It returns (false, nil) when the part
// is absent, errPartTooLarge when it was skipped, and wraps malformed XML.
func (o *officeReader) decode(name string, fn func(tok xml.Token, stack []string) error) (bool, error) {
	rc, cr, err := o.open(name)
	if rc == nil {
		return false, err
	}
	defer rc.Close()
	// encoding/xml expands no external or custom entities, so a document cannot
	// inflate itself beyond the bytes read here.
	d := xml.NewDecoder(cr)
	var stack []string // local names of the open elements
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := o.ctx.Err(); err != nil {
				return false, err
			}
		}
		tok, err := d.RawToken()
		if cr.over {
			o.skip(name)
			return false, errPartTooLarge
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > 256 {
				return false, fmt.Errorf("%s: elements nested too deep", name)
			}
			if err := fn(t, stack); err != nil {
				return false, err
			}
			stack = append(stack, t.Name.Local)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if err := fn(t, stack); err != nil {
				return false, err
			}
		default:
			if err := fn(t, stack); err != nil {
				return false, err
			}
		}
	}
}

// countElements counts the elements named child directly inside an element named
// parent (local names: transitional and strict OOXML differ in namespace only). It
// returns -1 for a missing part.
func (o *officeReader) countElements(name, parent, child string) (int, error) {
	n := 0
	found, err := o.decode(name, func(tok xml.Token, stack []string) error {
		if t, ok := tok.(xml.StartElement); ok && t.Name.Local == child && len(stack) > 0 && stack[len(stack)-1] == parent {
			n++
		}
		return nil
	})
	if errors.Is(err, errPartTooLarge) {
		return -1, nil
	}
	if err != nil || !found {
		return -1, err
	}
	return n, nil
}

// text collects the character data of the elements whose local names are in want and
// whose parent is the part's root element.
func (o *officeReader) text(name string, want ...string) (map[string]string, error) {
	out := map[string]string{}
	var cur string
	_, err := o.decode(name, func(tok xml.Token, stack []string) error {
		switch t := tok.(type) {
		case xml.StartElement:
			cur = ""
			if len(stack) == 1 {
				for _, w := range want {
					if t.Name.Local == w {
						cur = w
					}
				}
			}
		case xml.CharData:
			if cur != "" && len(out[cur]) < 4096 {
				out[cur] += string(t)
			}
		case xml.EndElement:
			cur = ""
		}
		return nil
	})
	if errors.Is(err, errPartTooLarge) {
		err = nil
	}
	return out, err
}

// ooxmlRels maps relationship type (its last path element, e.g. "officeDocument") to
// target from the package relationships.
func (o *officeReader) ooxmlRels() map[string]string {
	if o.rels != nil {
		return o.rels
	}
	rels := map[string]string{}
	o.rels = rels
	_, _ = o.decode("_rels/.rels", func(tok xml.Token, stack []string) error {
		t, ok := tok.(xml.StartElement)
		if !ok || t.Name.Local != "Relationship" {
			return nil
		}
		var typ, target string
		for _, a := range t.Attr {
			switch a.Name.Local {
			case "Type":
				typ = path.Base(a.Value)
			case "Target":
				target = strings.TrimPrefix(path.Clean("/"+a.Value), "/")
			}
		}
		if _, seen := rels[typ]; !seen && typ != "" {
			rels[typ] = target
		}
		return nil
	})
	return rels
}

// ooxmlMainPart is the part the package relationships name as the document, or the
// conventional name when they do not.
func (o *officeReader) ooxmlMainPart(conventional string) string {
	if t := o.ooxmlRels()["officeDocument"]; t != "" && o.parts[t] != nil {
		return t
	}
	return conventional
}

// ooxmlApp reads docProps/app.xml, the extended properties: the application, and for
// word processing the page and word counts the application last recorded.
func (o *officeReader) ooxmlApp(stats bool) error {
	name := "docProps/app.xml"
	if t := o.ooxmlRels()["extended-properties"]; t != "" && o.parts[t] != nil {
		name = t
	}
	props, err := o.text(name, "Application", "Pages", "Words")
	if err != nil {
		return err
	}
	o.rep.Application = strings.TrimSpace(props["Application"])
	if stats {
		o.rep.Pages = atoi(props["Pages"])
		o.rep.Words = atoi(props["Words"])
	}
	return nil
}

func atoi(s string) *int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

// odfMeta reads meta.xml: the generator and the document statistics (attributes of
// meta:document-statistic, by local name). With stats, pages and words are reported.
func (o *officeReader) odfMeta(stats bool) (map[string]string, error) {
	st := map[string]string{}
	var inGenerator bool
	_, err := o.decode("meta.xml", func(tok xml.Token, stack []string) error {
		switch t := tok.(type) {
		case xml.StartElement:
			inGenerator = t.Name.Local == "generator"
			if t.Name.Local == "document-statistic" {
				for _, a := range t.Attr {
					st[a.Name.Local] = a.Value
				}
			}
		case xml.CharData:
			if inGenerator && len(o.rep.Application) < 4096 {
				o.rep.Application += string(t)
			}
		case xml.EndElement:
			inGenerator = false
		}
		return nil
	})
	if errors.Is(err, errPartTooLarge) {
		err = nil
	}
	o.rep.Application = strings.TrimSpace(o.rep.Application)
	if stats {
		o.rep.Pages = atoi(st["page-count"])
		o.rep.Words = atoi(st["word-count"])
	}
	return st, err
}

// odfCount counts the body's child elements named child (sheets, slides) in
// content.xml; when content.xml is skipped or absent, the statistic named stat from
// meta.xml stands in.
func (o *officeReader) odfCount(set func(int), body, child, stat string) error {
	st, err := o.odfMeta(false)
	if err != nil {
		return err
	}
	n, err := o.countElements("content.xml", body, child)
	if err != nil {
		return err
	}
	if n < 0 {
		if p := atoi(st[stat]); p != nil {
			n = *p
		}
	}
	if n >= 0 {
		set(n)
	}
	return nil
}

// countingReader notes when more than max bytes were read through it.
type countingReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return n, io.EOF
	}
	return n, err
}

// inspectCFB recognises a password-protected OOXML document: a compound file whose
// directory holds an "EncryptedPackage" stream. Directory entries are 128 bytes at
// 128-byte-aligned offsets (sectors are 512 or 4096 bytes), each starting with its
// UTF-16LE name, so an aligned scan finds them without following the FAT chains.
// Other compound files get no office section.
func (e *Engine) inspectCFB(ctx context.Context, src source) (*OfficeReport, error) {
	name := utf16le("EncryptedPackage")
	buf := make([]byte, 1<<20) // a multiple of 128, so chunks keep the alignment
	for off := int64(0); off < src.size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := src.f.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("inspect: read compound file: %w", err)
		}
		for i := 0; i+128 <= n; i += 128 {
			entry := buf[i : i+128]
			nameLen := binary.LittleEndian.Uint16(entry[64:66])
			const streamObject = 2
			if int(nameLen) == len(name)+2 && entry[66] == streamObject && bytes.Equal(entry[:len(name)], name) {
				return &OfficeReport{Encrypted: true}, nil
			}
		}
		if n < len(buf) {
			break
		}
	}
	return nil, nil
}

func utf16le(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for _, c := range []byte(s) {
		b = append(b, c, 0)
	}
	return b
}

// tooManyEntries refuses a container with more entries than are read.
func tooManyEntries[N int | uint64](n N, limit int) error {
	return &domain.Error{Code: domain.CodeCorruptedFile,
		Message: fmt.Sprintf("the office document holds %d entries; at most %d are read", n, limit)}
}
