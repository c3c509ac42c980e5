package office

import (
	"archive/zip"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

var errTooLarge = errors.New("office: input too large")

// maxPagePartBytes bounds the XML read to count pages (zip-bomb safety).
const maxPagePartBytes = 4 << 20

// MaxCountPages is the largest page count CountPages reports, as for a PDF.
const MaxCountPages = 100_000

var slidePart = regexp.MustCompile(`^ppt/slides/slide[0-9]+\.xml$`)

// CountPages returns an office document's page count where it is cheap to know
// without rendering: docx and odt from the page count the authoring application
// recorded (docProps/app.xml Pages, meta.xml meta:page-count), pptx and odp from the
// slide count. ok is false for other formats, a missing or unreadable count, a count
// past MaxCountPages (a file states what it likes: prices and the files table take
// only a count a real document may have), or a damaged container; the count of a
// word-processing document is the author's application's, which LibreOffice's layout
// may differ from by a page or two.
func CountPages(path string, f domain.Format) (pages int, ok bool) {
	n, ok := countPages(path, strings.ToLower(f.Extension))
	if !ok || n < 1 || n > MaxCountPages {
		return 0, false
	}
	return n, true
}

// maxCountEntries bounds the entries of a container whose pages are counted; the
// count is read from its end record before archive/zip allocates one per entry.
const maxCountEntries = 100_000

func countPages(path, ext string) (int, bool) {
	switch ext {
	case "docx", "pptx", "odt", "odp":
	default:
		return 0, false
	}
	fh, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return 0, false
	}
	if n, err := zipparts.EntryCount(fh, st.Size()); err != nil || n > maxCountEntries {
		return 0, false
	}
	zr, err := zip.NewReader(fh, st.Size())
	if err != nil || len(zr.File) > maxCountEntries {
		return 0, false
	}
	parts := map[string]*zip.File{}
	for _, zf := range zr.File {
		if _, dup := parts[zf.Name]; !dup {
			parts[zf.Name] = zf
		}
	}
	switch ext {
	case "docx":
		return elementInt(parts["docProps/app.xml"], "Pages")
	case "pptx":
		n := 0
		for name := range parts {
			if slidePart.MatchString(name) {
				n++
			}
		}
		return n, n > 0
	case "odt":
		return attrInt(parts["meta.xml"], "document-statistic", "page-count")
	case "odp":
		return countElements(parts["content.xml"], "page")
	}
	return 0, false
}

func openPart(zf *zip.File) (io.ReadCloser, *xml.Decoder, bool) {
	if zf == nil || zf.UncompressedSize64 > maxPagePartBytes {
		return nil, nil, false
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, nil, false
	}
	return rc, xml.NewDecoder(io.LimitReader(rc, maxPagePartBytes)), true
}

// elementInt reads the integer text of the first element with this local name.
func elementInt(zf *zip.File, name string) (int, bool) {
	rc, d, ok := openPart(zf)
	if !ok {
		return 0, false
	}
	defer rc.Close()
	for {
		tok, err := d.Token()
		if err != nil {
			return 0, false
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == name {
			var s string
			if err := d.DecodeElement(&s, &se); err != nil {
				return 0, false
			}
			n, err := strconv.Atoi(strings.TrimSpace(s))
			return n, err == nil && n > 0
		}
	}
}

// attrInt reads an integer attribute of the first element with this local name.
func attrInt(zf *zip.File, elem, attr string) (int, bool) {
	rc, d, ok := openPart(zf)
	if !ok {
		return 0, false
	}
	defer rc.Close()
	for {
		tok, err := d.Token()
		if err != nil {
			return 0, false
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == elem {
			for _, a := range se.Attr {
				if a.Name.Local == attr {
					n, err := strconv.Atoi(a.Value)
					return n, err == nil && n > 0
				}
			}
			return 0, false
		}
	}
}

// countElements counts the elements with this local name (ODF draw:page).
func countElements(zf *zip.File, name string) (int, bool) {
	rc, d, ok := openPart(zf)
	if !ok {
		return 0, false
	}
	defer rc.Close()
	n := 0
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			return n, n > 0
		}
		if err != nil {
			return 0, false
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == name && se.Name.Space == "draw" {
			if n++; n > MaxCountPages {
				return 0, false
			}
		}
	}
}
