package docstruct

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// hinted is a DOCX body as Word saves it, with the page count app.xml records.
func hinted(t *testing.T, body string, pages int) string {
	t.Helper()
	parts := map[string]string{
		"word/document.xml": `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body + `</w:body></w:document>`,
	}
	if pages > 0 {
		parts["docProps/app.xml"] = fmt.Sprintf(`<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"><Application>Microsoft Office Word</Application><Pages>%d</Pages><Words>40</Words></Properties>`, pages)
	}
	return writeZip(t, parts)
}

func para(text string) string { return `<w:p><w:r><w:t>` + text + `</w:t></w:r></w:p>` }

// Pages come from the breaks Word saved: a rendered break starts a page at the next
// text (within a paragraph too), an author's page break followed by Word's rendered
// one is one page, a table row carried over a page (a rendered break in each cell
// that goes on) takes both pages and the next row the second, and a footnote is on
// its reference's page.
func TestPagesFromSavedBreaks(t *testing.T) {
	body := para("One") +
		`<w:p><w:r><w:t>Two runs</w:t><w:lastRenderedPageBreak/><w:t xml:space="preserve"> on to page two</w:t></w:r></w:p>` +
		para("Three") +
		`<w:p><w:r><w:br w:type="page"/></w:r></w:p>` +
		`<w:p><w:r><w:lastRenderedPageBreak/><w:t>Four</w:t><w:footnoteReference w:id="2"/></w:r></w:p>` +
		`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>A</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>B</w:t></w:r></w:p></w:tc></w:tr>` +
		`<w:tr><w:tc><w:p><w:r><w:t>C</w:t></w:r></w:p><w:p><w:r><w:lastRenderedPageBreak/><w:t>C2</w:t></w:r></w:p></w:tc>` +
		`<w:tc><w:p><w:r><w:t>D</w:t></w:r></w:p><w:p><w:r><w:lastRenderedPageBreak/><w:t>D2</w:t></w:r></w:p></w:tc></w:tr>` +
		`<w:tr><w:tc><w:p><w:r><w:t>E</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>F</w:t></w:r></w:p></w:tc></w:tr></w:tbl>` +
		`<w:p><w:pPr><w:pageBreakBefore/></w:pPr><w:r><w:lastRenderedPageBreak/><w:t>Five</w:t></w:r></w:p>`
	d, err := ReadDOCX(hinted(t, body, 5), zipparts.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if d.PageSource != PageSourceHints || d.Pages != 5 {
		t.Fatalf("source %q, %d pages; want hints, 5", d.PageSource, d.Pages)
	}
	want := map[string][]int{"One": {1}, "Two runs on to page two": {1, 2}, "Three": {2}, "Four[^1]": {3}, "Five": {5}}
	for _, b := range d.Blocks {
		switch b.Kind {
		case Table:
			if w := [][]int{{3}, {3, 4}, {4}}; !slices.EqualFunc(b.RowPages, w, slices.Equal) || !slices.Equal(b.Pages, []int{3, 4}) {
				t.Errorf("table rows on %v, table on %v; want %v, [3 4]", b.RowPages, b.Pages, w)
			}
		case Footnote:
			if !slices.Equal(b.Pages, []int{3}) {
				t.Errorf("footnote on %v, want [3]", b.Pages)
			}
		default:
			if w, ok := want[b.Text]; !ok || !slices.Equal(b.Pages, w) {
				t.Errorf("%q on %v, want %v", b.Text, b.Pages, w)
			}
		}
	}
}

// Breaks that do not add up to the page count the file records, a file that records
// none, and one without any rendered break (LibreOffice saves none) give no pages:
// the layout has to tell them.
func TestPagesNotFromBreaksThatDisagree(t *testing.T) {
	body := para("One") + `<w:p><w:r><w:lastRenderedPageBreak/><w:t>Two</w:t></w:r></w:p>`
	for _, c := range []struct {
		name  string
		body  string
		pages int
	}{
		{"count differs", body, 3},
		{"no count", body, 0},
		{"no rendered break", para("One") + `<w:p><w:r><w:br w:type="page"/><w:t>Two</w:t></w:r></w:p>`, 2},
	} {
		d, err := ReadDOCX(hinted(t, c.body, c.pages), zipparts.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if d.PageSource != "" || d.Pages != 0 {
			t.Errorf("%s: source %q, %d pages", c.name, d.PageSource, d.Pages)
		}
		for _, b := range d.Blocks {
			if b.Pages != nil {
				t.Errorf("%s: %q on %v", c.name, b.Text, b.Pages)
			}
		}
	}
}

// PagedDOCX agrees with ReadDOCX, a break found across the reads of a long body.
func TestPagedDOCX(t *testing.T) {
	long := strings.Repeat(para("filler text"), 20000)
	body := long + `<w:p><w:r><w:lastRenderedPageBreak/><w:t>Two</w:t></w:r></w:p>`
	if !PagedDOCX(hinted(t, body, 2), zipparts.DefaultLimits()) {
		t.Error("a DOCX with as many rendered breaks as pages is paged by them")
	}
	for _, c := range []struct {
		body  string
		pages int
	}{{body, 3}, {body, 0}, {long, 1}} {
		if PagedDOCX(hinted(t, c.body, c.pages), zipparts.DefaultLimits()) {
			t.Errorf("%d bytes of body, %d pages recorded: paged by its breaks", len(c.body), c.pages)
		}
	}
}
