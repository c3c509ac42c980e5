// Package aireadytest makes documents of known structure for the ai-ready tests and
// benchmarks, and scores outputs against them. It writes PDFs directly (headings at
// chosen sizes, wrapped paragraphs, bulleted lists, ruled and aligned tables, pages of
// two or three columns, running headers and footers with page numbers) with
// jobs/ops/pdf/pdftest, not with the code under test; and Sources (text documents,
// decks, workbooks) as HTML, Markdown and flat ODF that LibreOffice turns into DOCX,
// ODT, PPTX, ODP, XLSX, ODS and PDF (Convert). Truth and Compare score a markdown
// output: heading F1, table cell F1, list item recall and reading-order agreement.
package aireadytest

import (
	"fmt"
	"strings"

	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// Fonts are the standard fonts pages use.
const (
	Regular = "F1" // Helvetica
	Bold    = "F2" // Helvetica-Bold
	Italic  = "F3" // Helvetica-Oblique
)

// Page is one Letter page being written; positions are in points from the top-left
// corner, y giving the baseline.
type Page struct {
	c strings.Builder
}

// Height and Width of every page (Letter).
const Width, Height = pdftest.LetterWidth, pdftest.LetterHeight

// Text sets s at (x, baseline y) in font at size.
func (p *Page) Text(x, y float64, font string, size float64, s string) {
	fmt.Fprintf(&p.c, "BT /%s %g Tf %g %g Td (%s) Tj ET\n", font, size, x, Height-y, escape(s))
}

// Line strokes a line 0.75 pt wide from (x0, y0) to (x1, y1).
func (p *Page) Line(x0, y0, x1, y1 float64) {
	fmt.Fprintf(&p.c, "0.75 w %g %g m %g %g l S\n", x0, Height-y0, x1, Height-y1)
}

// escape quotes s for a string literal in WinAnsiEncoding: "•" is byte 0x95.
func escape(s string) string {
	s = pdftest.Escape(s)
	return strings.NewReplacer("•", `\225`, "–", `\226`, "—", `\227`).Replace(s)
}

// Wrap breaks text into lines of at most width points at size (Helvetica's widths
// approximated generously, so lines never overrun).
func Wrap(text string, width, size float64) []string {
	max := int(width / (0.56 * size))
	var lines []string
	var cur string
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > max {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// Paragraph sets text wrapped to width from (x, y) at size with 1.3 leading and
// returns the baseline below it, a paragraph gap included.
func (p *Page) Paragraph(x, y, width, size float64, text string) float64 {
	for _, l := range Wrap(text, width, size) {
		p.Text(x, y, Regular, size, l)
		y += 1.3 * size
	}
	return y + 0.7*size
}

// Heading sets a bold heading at size and returns the baseline below it.
func (p *Page) Heading(x, y, size float64, text string) float64 {
	p.Text(x, y, Bold, size, text)
	return y + 1.6*size
}

// Bullets sets a bulleted list: the bullet at x, the text at x+18, and returns the
// baseline below it.
func (p *Page) Bullets(x, y, size float64, items []string) float64 {
	for _, it := range items {
		p.Text(x, y, Regular, size, "•")
		for _, l := range Wrap(it, 400, size) {
			p.Text(x+18, y, Regular, size, l)
			y += 1.3 * size
		}
	}
	return y + 0.7*size
}

// RuledTable draws rows in a grid of rules, columns widths wide, rows 1.8×size high,
// and returns the y below it.
func (p *Page) RuledTable(x, y float64, widths []float64, size float64, rows [][]string) float64 {
	rowH := 1.8 * size
	total := 0.0
	for _, w := range widths {
		total += w
	}
	for i := 0; i <= len(rows); i++ {
		p.Line(x, y+float64(i)*rowH, x+total, y+float64(i)*rowH)
	}
	cx := x
	for i := 0; i <= len(widths); i++ {
		p.Line(cx, y, cx, y+float64(len(rows))*rowH)
		if i < len(widths) {
			cx += widths[i]
		}
	}
	for r, row := range rows {
		cx := x
		for c, cell := range row {
			font := Regular
			if r == 0 {
				font = Bold
			}
			p.Text(cx+4, y+float64(r)*rowH+1.3*size, font, size, cell)
			cx += widths[c]
		}
	}
	return y + float64(len(rows))*rowH + 1.5*size
}

// AlignedTable sets rows as text aligned in columns starting at xs, without rules,
// and returns the baseline below it.
func (p *Page) AlignedTable(xs []float64, y, size float64, rows [][]string) float64 {
	for r, row := range rows {
		font := Regular
		if r == 0 {
			font = Bold
		}
		for c, cell := range row {
			p.Text(xs[c], y, font, size, cell)
		}
		y += 1.6 * size
	}
	return y + 0.7*size
}

// Doc is a document being written.
type Doc struct {
	Pages []*Page
	// Header is set at the top of every page, Footer at the bottom left, and
	// "Page N of M" at the bottom right when PageNumbers is set.
	Header, Footer string
	PageNumbers    bool
}

// NewPage adds a page.
func (d *Doc) NewPage() *Page {
	p := &Page{}
	d.Pages = append(d.Pages, p)
	return p
}

// Bytes writes the PDF.
func (d *Doc) Bytes() []byte {
	var w pdftest.Writer
	pages := make([]pdftest.Page, len(d.Pages))
	for i, p := range d.Pages {
		var furniture Page
		if d.Header != "" {
			furniture.Text(72, 40, Regular, 9, d.Header)
		}
		if d.Footer != "" {
			furniture.Text(72, Height-36, Regular, 9, d.Footer)
		}
		if d.PageNumbers {
			furniture.Text(480, Height-36, Regular, 9, fmt.Sprintf("Page %d of %d", i+1, len(d.Pages)))
		}
		pages[i] = pdftest.Page{Width: Width, Height: Height, Content: furniture.c.String() + p.c.String(),
			Fonts: map[string]string{Regular: "Helvetica", Bold: "Helvetica-Bold", Italic: "Helvetica-Oblique"}}
	}
	return w.Document(pages)
}

// Sentence returns a distinct sentence of about 12 words, tagged so tests can find it.
func Sentence(tag string, i int) string {
	words := []string{"river", "stone", "lantern", "harbor", "meadow", "copper", "signal", "orchard", "canvas", "thunder", "marble", "willow"}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d", tag, i)
	for j := range 11 {
		b.WriteByte(' ')
		b.WriteString(words[(i*7+j*5)%len(words)])
	}
	b.WriteByte('.')
	return b.String()
}

// Prose returns n sentences tagged tag, numbered from first.
func Prose(tag string, first, n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = Sentence(tag, first+i)
	}
	return strings.Join(s, " ")
}

// Report returns an n-page report: each page has a heading of one of three levels,
// paragraphs, and in turn a bulleted list, a ruled 4×3 table, two columns of prose
// or an aligned table; every page has a running header, footer and page number.
func Report(n int) []byte {
	d := &Doc{Header: "ACME Corporation Annual Report", Footer: "Confidential - internal use only", PageNumbers: true}
	for i := range n {
		p := d.NewPage()
		y := 100.0
		switch i % 4 {
		case 0:
			y = p.Heading(72, y, 22, fmt.Sprintf("Chapter %d", i/4+1))
		case 1, 3:
			y = p.Heading(72, y, 16, fmt.Sprintf("Section %d.%d", i/4+1, i%4))
		default:
			y = p.Heading(72, y, 13, fmt.Sprintf("Topic %d.%d.1", i/4+1, i%4))
		}
		y = p.Paragraph(72, y, 468, 10, Prose("p", i*100, 6))
		switch i % 4 {
		case 0:
			y = p.Bullets(90, y, 10, []string{Sentence("b", i*100), Sentence("b", i*100+1), Sentence("b", i*100+2)})
		case 1:
			y = p.RuledTable(72, y, []float64{120, 120, 120}, 10, [][]string{
				{"Region", "Revenue", "Growth"}, {"North", fmt.Sprint(100 + i), "3%"}, {"South", "95", "1%"}, {"East", "120", "4%"}})
		case 2:
			left, right := 72.0, 324.0
			yl, yr := y, y
			for k := range 3 {
				yl = p.Paragraph(left, yl, 216, 10, Prose("l", i*100+k*5, 5))
				yr = p.Paragraph(right, yr, 216, 10, Prose("r", i*100+k*5, 5))
			}
			y = max(yl, yr)
		case 3:
			y = p.AlignedTable([]float64{72, 200, 300, 420}, y, 10, [][]string{
				{"Item", "Quantity", "Price", "Total"}, {"Bolts", "10", "0.20", "2.00"}, {"Nuts", "12", "0.10", "1.20"}})
		}
		for y < 640 {
			y = p.Paragraph(72, y, 468, 10, Prose("q", i*100+int(y), 3))
		}
	}
	return d.Bytes()
}
