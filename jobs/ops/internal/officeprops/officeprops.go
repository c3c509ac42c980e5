// Package officeprops reads what an OOXML or ODF container says of itself: the
// application that wrote it, the page and word counts it last recorded, and its sheet,
// slide or drawing-page count from its own parts. It is filemill's one office page
// counter: the inspect engine reports from it, and the page count that prices a job
// (office.CountPages) comes from it. Every XML part is read up to a bound of
// decompressed bytes; a part over it is skipped, not the file.
//
// It imports the standard library and zipparts only.
package officeprops

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// errPartTooLarge marks an XML part over the bound: the part is skipped, not the file.
var errPartTooLarge = errors.New("part too large")

// Report is what a container says of itself. A field is nil when the container does
// not say it, or says it in a part that was skipped.
type Report struct {
	Application string
	Pages       *int
	Words       *int
	Sheets      *int
	Slides      *int
	// SkippedParts lists XML parts left unread because they exceed the bound.
	SkippedParts []string
}

// Read reads the properties of a container of the format with this extension (docx,
// xlsx, pptx, odt, ods, odp, odg; others give an empty report), reading at most
// maxPartBytes of any XML part. The caller has bounded the container's entries. Its
// errors are malformed XML or an unreadable part, or ctx's.
func Read(ctx context.Context, zr *zip.Reader, ext string, maxPartBytes int64) (*Report, error) {
	o := &officeReader{ctx: ctx, maxBytes: maxPartBytes, parts: map[string]*zip.File{}, rep: &Report{}}
	for _, zf := range zr.File {
		if _, dup := o.parts[zf.Name]; !dup { // the first of duplicate names wins, as in Office
			o.parts[zf.Name] = zf
		}
	}
	var err error
	switch ext {
	case "docx":
		err = o.ooxmlApp(true)
	case "xlsx":
		if err = o.ooxmlApp(false); err == nil {
			var n int
			if n, err = o.countElements(o.ooxmlMainPart("xl/workbook.xml"), "sheets", "sheet"); n >= 0 {
				o.rep.Sheets = &n
			}
		}
	case "pptx":
		err = o.ooxmlApp(false)
		n := 0
		for name := range o.parts {
			if slidePart.MatchString(name) {
				n++
			}
		}
		o.rep.Slides = &n
	case "odt":
		_, err = o.odfMeta(true)
	case "ods":
		err = o.odfCount(func(n int) { o.rep.Sheets = &n }, "spreadsheet", "table", "table-count")
	case "odp":
		err = o.odfCount(func(n int) { o.rep.Slides = &n }, "presentation", "page", "page-count")
	case "odg":
		err = o.odfCount(func(n int) { o.rep.Pages = &n }, "drawing", "page", "page-count")
	}
	if err != nil {
		return nil, err
	}
	return o.rep, nil
}

// PageCount is the pages of a document as the report gives them: the recorded page
// count of a text or drawing, the slides of a presentation. ok is false when the
// report has none, or for a spreadsheet (whose pages depend on its print layout).
func (r *Report) PageCount(ext string) (int, bool) {
	var p *int
	switch ext {
	case "docx", "odt", "odg":
		p = r.Pages
	case "pptx", "odp":
		p = r.Slides
	}
	if p == nil || *p < 1 {
		return 0, false
	}
	return *p, true
}

// Limits bound what CountPages reads.
type Limits struct {
	MaxEntries   int   // entries in the container
	MaxPartBytes int64 // decompressed bytes of one XML part
}

// CountPages returns the page count of the container at path (see PageCount); ok is
// false for a damaged container, one over the limits, or one that records no count.
func CountPages(ctx context.Context, path, ext string, lim Limits) (int, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false
	}
	// The entry count from the end record, before archive/zip allocates one struct
	// per entry.
	if n, err := zipparts.EntryCount(f, st.Size()); err != nil || n > uint64(lim.MaxEntries) {
		return 0, false
	}
	zr, err := zip.NewReader(f, st.Size())
	// Entry names are only looked up, never used as paths: "insecure" ones are fine.
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return 0, false
	}
	if len(zr.File) > lim.MaxEntries {
		return 0, false
	}
	rep, err := Read(ctx, zr, ext, lim.MaxPartBytes)
	if err != nil {
		return 0, false
	}
	return rep.PageCount(ext)
}

var slidePart = regexp.MustCompile(`^ppt/slides/slide[0-9]+\.xml$`)

type officeReader struct {
	ctx      context.Context
	maxBytes int64
	parts    map[string]*zip.File
	rep      *Report
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
