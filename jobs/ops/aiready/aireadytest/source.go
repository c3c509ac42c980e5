package aireadytest

import (
	"fmt"
	"html"
	"math/rand/v2"
	"strings"
)

// A Source is a document of known structure, written by the tests in a format
// LibreOffice reads (HTML for text documents, flat ODF for workbooks and decks) and
// turned into the formats under test; its elements are the truth outputs are scored
// against.
type Source struct {
	Name     string
	Elements []Element
	// Sheets, when set, make the source a workbook: one table a sheet.
	Sheets []Sheet
	// Slides, when set, make the source a deck.
	Slides []Slide
}

// Element is one element of a text document.
type Element struct {
	Kind  ElementKind
	Level int    // a heading's level
	Text  string // a heading's or paragraph's text
	Items []Item // a list's items
	Table *Table
}

// ElementKind is what an element is.
type ElementKind int

// Element kinds.
const (
	HeadingElement ElementKind = iota
	ParagraphElement
	ListElement
	TableElement
)

// Item is a list item at a depth (0 outermost).
type Item struct {
	Depth   int
	Text    string
	Ordered bool
}

// Table is a table: Rows[0] its header row; Span, when above 1, merges the header's
// first Span cells into one (its text Rows[0][0]); Borderless draws no lines;
// Padding is the cells' padding in pixels (default 4); numbers are set flush right.
type Table struct {
	Rows       [][]string
	Span       int
	Borderless bool
	Padding    int
	// Width, when set, is the table's width in pixels: long cells wrap.
	Width int
}

// Sheet is one sheet of a workbook.
type Sheet struct {
	Name string
	Rows [][]string
}

// Slide is one slide: a title and bullets (Depth 0 or 1), and speaker notes.
type Slide struct {
	Title   string
	Bullets []Item
	Notes   string
}

// Grid is a table as the truth has it: merged cells repeated over their positions.
func (t *Table) Grid() [][]string {
	out := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = append([]string(nil), r...)
	}
	for c := 1; c < t.Span && c < len(out[0]); c++ {
		out[0][c] = out[0][0]
	}
	return out
}

// HTML writes a text source as an HTML page: h1–h6, p, nested ul/ol, tables with a
// th header row (border="1" unless borderless; colspan for a merged header cell).
func (s *Source) HTML() string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html.EscapeString(s.Name) + "</title></head><body>\n")
	for _, e := range s.Elements {
		switch e.Kind {
		case HeadingElement:
			fmt.Fprintf(&b, "<h%d>%s</h%d>\n", e.Level, html.EscapeString(e.Text), e.Level)
		case ParagraphElement:
			fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(e.Text))
		case ListElement:
			writeList(&b, e.Items)
		case TableElement:
			t := e.Table
			pad := t.Padding
			if pad == 0 {
				pad = 4
			}
			width := ""
			if t.Width > 0 {
				width = fmt.Sprintf(" width=\"%d\"", t.Width)
			}
			if t.Borderless {
				fmt.Fprintf(&b, "<table border=\"0\" cellpadding=\"%d\"%s>\n", pad, width)
			} else {
				fmt.Fprintf(&b, "<table border=\"1\" cellpadding=\"%d\" cellspacing=\"0\"%s>\n", pad, width)
			}
			for r, row := range t.Rows {
				b.WriteString("<tr>")
				for c := 0; c < len(row); c++ {
					tag := "td"
					if r == 0 {
						tag = "th"
					}
					if r == 0 && c == 0 && t.Span > 1 {
						fmt.Fprintf(&b, "<%s colspan=\"%d\">%s</%s>", tag, t.Span, html.EscapeString(row[c]), tag)
						c += t.Span - 1
						continue
					}
					align := ""
					if isNumber(row[c]) {
						align = ` align="right"`
					}
					fmt.Fprintf(&b, "<%s%s>%s</%s>", tag, align, html.EscapeString(row[c]), tag)
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</table>\n")
		}
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789.,-%") == ""
}

// writeList writes items as nested lists: a deeper item opens a list inside the item
// before it.
func writeList(b *strings.Builder, items []Item) {
	var open []bool // ordered, per open list
	for i, it := range items {
		for len(open) > it.Depth+1 {
			b.WriteString("</li>" + closeTag(open[len(open)-1]))
			open = open[:len(open)-1]
		}
		if len(open) == it.Depth+1 && i > 0 {
			b.WriteString("</li>")
		}
		for len(open) < it.Depth+1 {
			if it.Ordered {
				b.WriteString("<ol>")
			} else {
				b.WriteString("<ul>")
			}
			open = append(open, it.Ordered)
		}
		b.WriteString("<li>" + html.EscapeString(it.Text))
	}
	for len(open) > 0 {
		b.WriteString("</li>" + closeTag(open[len(open)-1]))
		open = open[:len(open)-1]
	}
	b.WriteString("\n")
}

func closeTag(ordered bool) string {
	if ordered {
		return "</ol>"
	}
	return "</ul>"
}

const odfNS = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" ` +
	`xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" ` +
	`xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" ` +
	`xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" ` +
	`xmlns:loext="urn:org:documentfoundation:names:experimental:office:xmlns:loext:1.0"`

// FODS writes a workbook source as a flat OpenDocument spreadsheet.
func (s *Source) FODS() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<office:document " + odfNS +
		` office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body><office:spreadsheet>`)
	for _, sh := range s.Sheets {
		fmt.Fprintf(&b, `<table:table table:name="%s">`, html.EscapeString(sh.Name))
		for _, r := range sh.Rows {
			b.WriteString("<table:table-row>")
			for _, c := range r {
				fmt.Fprintf(&b, `<table:table-cell office:value-type="string"><text:p>%s</text:p></table:table-cell>`, html.EscapeString(c))
			}
			b.WriteString("</table:table-row>")
		}
		b.WriteString("</table:table>")
	}
	b.WriteString("</office:spreadsheet></office:body></office:document>\n")
	return b.String()
}

// FODP writes a deck source as a flat OpenDocument presentation: each slide a title
// placeholder and an outline placeholder holding the bullets, and notes.
func (s *Source) FODP() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<office:document " + odfNS +
		` office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">` +
		`<office:styles><style:presentation-page-layout style:name="AL1T1"><presentation:placeholder presentation:object="title" svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm"/>` +
		`<presentation:placeholder presentation:object="outline" svg:x="2cm" svg:y="5cm" svg:width="24cm" svg:height="12cm"/></style:presentation-page-layout></office:styles>` +
		`<office:automatic-styles><style:style style:name="pr1" style:family="presentation"/><style:style style:name="pr2" style:family="presentation"/>` +
		`<style:style style:name="pr3" style:family="presentation"/></office:automatic-styles>` +
		`<office:master-styles><style:master-page style:name="Default"/></office:master-styles><office:body><office:presentation>`)
	for i, sl := range s.Slides {
		fmt.Fprintf(&b, `<draw:page draw:name="s%d" draw:master-page-name="Default" presentation:presentation-page-layout-name="AL1T1">`, i+1)
		fmt.Fprintf(&b, `<draw:frame draw:layer="layout" presentation:style-name="pr1" presentation:class="title" svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame>`, html.EscapeString(sl.Title))
		b.WriteString(`<draw:frame draw:layer="layout" presentation:style-name="pr2" presentation:class="outline" svg:x="2cm" svg:y="5cm" svg:width="24cm" svg:height="12cm"><draw:text-box>`)
		writeODFList(&b, sl.Bullets)
		b.WriteString(`</draw:text-box></draw:frame>`)
		if sl.Notes != "" {
			fmt.Fprintf(&b, `<presentation:notes><draw:frame draw:layer="layout" presentation:style-name="pr3" presentation:class="notes" svg:x="2cm" svg:y="15cm" svg:width="17cm" svg:height="10cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame></presentation:notes>`, html.EscapeString(sl.Notes))
		}
		b.WriteString(`</draw:page>`)
	}
	b.WriteString("</office:presentation></office:body></office:document>\n")
	return b.String()
}

func writeODFList(b *strings.Builder, items []Item) {
	open := 0
	for i, it := range items {
		for open > it.Depth+1 {
			b.WriteString("</text:list-item></text:list>")
			open--
		}
		if open == it.Depth+1 && i > 0 {
			b.WriteString("</text:list-item>")
		}
		for open < it.Depth+1 {
			b.WriteString("<text:list>")
			open++
		}
		fmt.Fprintf(b, "<text:list-item><text:p>%s</text:p>", html.EscapeString(it.Text))
	}
	for ; open > 0; open-- {
		b.WriteString("</text:list-item></text:list>")
	}
}

// words are the tests' vocabulary: distinct, so every cell and line can be found.
var words = []string{"amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
	"kestrel", "lagoon", "meadow", "nectar", "onyx", "pewter", "quartz", "russet", "saffron", "tundra", "umber",
	"violet", "walnut", "xenon", "yarrow", "zephyr"}

func phrase(r *rand.Rand, n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = words[r.IntN(len(words))]
	}
	s := strings.Join(p, " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// TextSource returns a generated text document: headings of three levels, prose,
// nested and numbered lists, and a table (bordered, borderless, borderless and
// narrow with cells over several lines, or with a merged header cell, as kind says:
// "ruled", "borderless", "wrapped", "merged").
func TextSource(seed int, tableKind string) *Source {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	s := &Source{Name: fmt.Sprintf("doc%d", seed)}
	add := func(e Element) { s.Elements = append(s.Elements, e) }
	add(Element{Kind: HeadingElement, Level: 1, Text: fmt.Sprintf("Report %s %d", words[seed%len(words)], seed)})
	add(Element{Kind: ParagraphElement, Text: Prose(fmt.Sprintf("d%da", seed), 1, 3)})
	for sec := 1; sec <= 2; sec++ {
		add(Element{Kind: HeadingElement, Level: 2, Text: fmt.Sprintf("Section %d %s", sec, phrase(r, 2))})
		add(Element{Kind: ParagraphElement, Text: Prose(fmt.Sprintf("d%ds%d", seed, sec), 1, 2+r.IntN(3))})
		if sec == 1 {
			ordered := seed%2 == 1
			items := []Item{{0, phrase(r, 3), ordered}, {1, phrase(r, 3), false}, {1, phrase(r, 2), false}, {0, phrase(r, 4), ordered}}
			add(Element{Kind: ListElement, Items: items})
			add(Element{Kind: HeadingElement, Level: 3, Text: fmt.Sprintf("Details %s", phrase(r, 2))})
			add(Element{Kind: ParagraphElement, Text: Prose(fmt.Sprintf("d%dt", seed), 1, 2)})
		} else {
			add(Element{Kind: TableElement, Table: GenTable(r, tableKind)})
			add(Element{Kind: ParagraphElement, Text: Prose(fmt.Sprintf("d%dz", seed), 1, 2)})
		}
	}
	return s
}

// GenTable returns a table of 3–4 columns and 4–6 rows of short words and numbers.
func GenTable(r *rand.Rand, kind string) *Table {
	cols := 3 + r.IntN(2)
	rows := 4 + r.IntN(3)
	t := &Table{Borderless: kind == "borderless" || kind == "wrapped", Padding: 1 + r.IntN(5)}
	notes := r.IntN(2) == 1 || kind == "wrapped" // a last column of a few words
	long := 4
	if kind == "wrapped" {
		// A narrow table whose notes run over two or three lines.
		t.Width, long = 380, 14
	}
	head := make([]string, cols)
	for c := range head {
		head[c] = strings.Title(words[(c*5+r.IntN(3))%len(words)]) + fmt.Sprint(c)
	}
	if kind == "merged" {
		t.Span = 2
		head[0] = "Group " + words[r.IntN(len(words))]
		head[1] = head[0]
	}
	t.Rows = append(t.Rows, head)
	if notes {
		t.Rows[0] = append(t.Rows[0], "Notes")
	}
	for i := 1; i < rows; i++ {
		row := make([]string, cols)
		row[0] = strings.Title(words[r.IntN(len(words))]) + fmt.Sprint(i)
		for c := 1; c < cols; c++ {
			if r.IntN(3) == 0 {
				row[c] = fmt.Sprintf("%d.%d", r.IntN(90), r.IntN(10))
			} else {
				row[c] = fmt.Sprint(10 + r.IntN(900))
			}
		}
		if notes {
			row = append(row, strings.ToLower(phrase(r, 1+r.IntN(long))))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// WorkbookSource returns a workbook of two sheets, each a header row and data rows.
func WorkbookSource(seed int) *Source {
	r := rand.New(rand.NewPCG(uint64(seed), 11))
	s := &Source{Name: fmt.Sprintf("book%d", seed)}
	for i := range 2 {
		t := GenTable(r, "ruled")
		s.Sheets = append(s.Sheets, Sheet{Name: fmt.Sprintf("%s sheet %d", strings.Title(words[(seed+i*3)%len(words)]), i+1), Rows: t.Rows})
	}
	return s
}

// DeckSource returns a deck of 3–4 slides, each a title and bullets two deep, the
// first with speaker notes.
func DeckSource(seed int) *Source {
	r := rand.New(rand.NewPCG(uint64(seed), 13))
	s := &Source{Name: fmt.Sprintf("deck%d", seed)}
	for i := range 3 + seed%2 {
		sl := Slide{Title: fmt.Sprintf("Slide %s %d", strings.Title(words[(seed+i)%len(words)]), i+1)}
		sl.Bullets = []Item{{0, phrase(r, 4), false}, {1, phrase(r, 3), false}, {0, phrase(r, 3), false}}
		if i == 0 {
			sl.Notes = "Speaker notes " + phrase(r, 5)
		}
		s.Slides = append(s.Slides, sl)
	}
	return s
}

// ColumnsSource returns a text source of headings and paragraphs for ColumnsPDF: a
// title, then per section a level-2 heading and 2×cols paragraphs.
func ColumnsSource(seed, cols int) *Source {
	s := &Source{Name: fmt.Sprintf("cols%d-%d", cols, seed)}
	s.Elements = append(s.Elements, Element{Kind: HeadingElement, Level: 1, Text: fmt.Sprintf("Columns %s %d", strings.Title(words[seed%len(words)]), seed)})
	for sec := 1; sec <= 2; sec++ {
		s.Elements = append(s.Elements, Element{Kind: HeadingElement, Level: 2, Text: fmt.Sprintf("Part %d %s", sec, strings.Title(words[(seed+sec)%len(words)]))})
		for p := range 2 * cols {
			s.Elements = append(s.Elements, Element{Kind: ParagraphElement, Text: Prose(fmt.Sprintf("k%ds%dp%d", seed, sec, p), 1, 4-cols/3)})
		}
	}
	return s
}

// ColumnsPDF draws a ColumnsSource on Letter pages: headings across the page, each
// section's paragraphs flowing down cols columns in turn, one section a page.
func ColumnsPDF(s *Source, cols int) []byte {
	const left, width, gutter = 72.0, 468.0, 20.0
	size := 10.0
	if cols >= 3 {
		size = 9
	}
	colW := (width - gutter*float64(cols-1)) / float64(cols)
	d := &Doc{}
	var p *Page
	y := 0.0
	var paras []string
	flush := func() {
		if len(paras) == 0 {
			return
		}
		per := (len(paras) + cols - 1) / cols
		bottom := y
		for c := range cols {
			yc := y
			for _, t := range paras[min(c*per, len(paras)):min((c+1)*per, len(paras))] {
				yc = p.Paragraph(left+float64(c)*(colW+gutter), yc, colW, size, t)
			}
			bottom = max(bottom, yc)
		}
		y = bottom + 10
		paras = nil
	}
	for _, e := range s.Elements {
		switch e.Kind {
		case HeadingElement:
			flush()
			if p == nil || e.Level == 2 && y > 100 {
				p = d.NewPage()
				y = 90
			}
			y = p.Heading(left, y, map[int]float64{1: 20, 2: 15}[e.Level], e.Text)
		case ParagraphElement:
			paras = append(paras, e.Text)
		}
	}
	flush()
	return d.Bytes()
}

// Markdown writes a text source as Markdown: ATX headings, nested lists indented four
// spaces a level, pipe tables (a merged header cell repeated).
func (s *Source) Markdown() string {
	var b strings.Builder
	for _, e := range s.Elements {
		switch e.Kind {
		case HeadingElement:
			fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", e.Level), e.Text)
		case ParagraphElement:
			b.WriteString(e.Text + "\n\n")
		case ListElement:
			n := map[int]int{}
			for _, it := range e.Items {
				m := "-"
				if it.Ordered {
					n[it.Depth]++
					m = fmt.Sprintf("%d.", n[it.Depth])
				}
				fmt.Fprintf(&b, "%s%s %s\n", strings.Repeat("    ", it.Depth), m, it.Text)
			}
			b.WriteString("\n")
		case TableElement:
			g := e.Table.Grid()
			for i, r := range g {
				b.WriteString("| " + strings.Join(r, " | ") + " |\n")
				if i == 0 {
					b.WriteString(strings.Repeat("| --- ", len(r)) + "|\n")
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
