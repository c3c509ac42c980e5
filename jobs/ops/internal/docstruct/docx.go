package docstruct

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// ReadDOCX reads a Word document's structure: headings from the paragraph styles
// (Title, Heading 1–9, or an outline level), lists from the numbering (bullets or
// numbers, with their levels), tables (header rows marked to repeat, else the first;
// gridSpan and vMerge repeated), images by their description, footnotes at the end.
// When the file carries the page breaks its application laid it out with (see
// pager) and their count agrees with the page count it recorded, each block gets its
// pages and the document PageSourceHints.
func ReadDOCX(path string, lim zipparts.Limits) (*Document, error) {
	c, err := zipparts.Open(path, lim)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	main := "word/document.xml"
	if !c.Has(main) {
		return nil, fmt.Errorf("docstruct: no %s", main)
	}
	r := &docxReader{styles: map[string]*docxStyle{}, nums: map[string]*docxNum{}, counters: map[string][]int{}, noteLabel: map[string]string{},
		notePage: map[string]int{}}
	if c.Has("word/styles.xml") {
		if err := r.readStyles(c); err != nil {
			return nil, err
		}
	}
	if c.Has("word/numbering.xml") {
		if err := r.readNumbering(c); err != nil {
			return nil, err
		}
	}
	notes := map[string]string{}
	if c.Has("word/footnotes.xml") {
		if notes, err = r.readNotes(c, "word/footnotes.xml"); err != nil {
			return nil, err
		}
	}
	// Pages are followed in the body only.
	r.pg, r.span = pager{page: 1}, span{}
	rc, err := c.Open(main)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	out, err := r.body(d)
	if err != nil {
		return nil, err
	}
	for _, id := range r.noteOrder {
		if t := notes[id]; t != "" {
			// A footnote is set on the page of its reference.
			out = append(out, &Block{Kind: Footnote, Label: r.noteLabel[id], Text: t, Pages: PageSpan(r.notePage[id], r.notePage[id])})
		}
	}
	doc := &Document{Blocks: out}
	if n := r.hinted(c); n > 0 {
		doc.Pages, doc.PageSource = n, PageSourceHints
	} else {
		for _, b := range out {
			b.Pages, b.RowPages = nil, nil
		}
	}
	return doc, nil
}

// hinted is the page count the body read tells by its saved breaks, when there are
// rendered ones and they agree with the count the file records; else 0.
func (r *docxReader) hinted(c *zipparts.Container) int {
	if n := r.pg.count(); r.pg.rendered > 0 && n > 0 && appPages(c) == n {
		return n
	}
	return 0
}

// pager follows the pages of a document body as the file's page breaks tell them:
// w:lastRenderedPageBreak, which Word writes wherever a page began when it last laid
// the document out (breaks of its own and the author's alike), w:br w:type="page" and
// pageBreakBefore. A break starts a page at the next text; a rendered break right
// after an author's break (no text between) is the same page's start. Section breaks
// count only through the rendered breaks that follow them.
type pager struct {
	page     int // the page the text read so far ends on
	pending  int // pages started since that text
	rendered int // w:lastRenderedPageBreak elements read
	text     bool
}

// at is the page text read now lies on.
func (p *pager) at() int {
	p.page += p.pending
	p.pending = 0
	p.text = true
	return p.page
}

func (p *pager) hard() { p.pending++ }

func (p *pager) renderedBreak() {
	p.rendered++
	p.pending = max(p.pending, 1)
}

// count is the page count: a break after the last text leaves a blank page.
func (p *pager) count() int { return p.page + p.pending }

// after orders two positions in the flow (page and pending breaks).
func (p pager) after(o pager) bool {
	return p.page+p.pending > o.page+o.pending || p.page+p.pending == o.page+o.pending && p.page > o.page
}

// span is the first and last page of what was read since it began (0: none).
type span struct{ first, last int }

func (s *span) add(o span) {
	if o.first == 0 {
		return
	}
	if s.first == 0 || o.first < s.first {
		s.first = o.first
	}
	s.last = max(s.last, o.last)
}

// text records text on the pager's current page.
func (r *docxReader) text() {
	pg := r.pg.at()
	r.span.add(span{pg, pg})
}

// begin starts a span of its own; end closes it, returning it and adding it to the
// span it was begun within.
func (r *docxReader) begin() span {
	outer := r.span
	r.span = span{}
	return outer
}

func (r *docxReader) end(outer span) span {
	inner := r.span
	outer.add(inner)
	r.span = outer
	return inner
}

// appPages is the page count docProps/app.xml records; 0 when it records none.
func appPages(c *zipparts.Container) int {
	const part = "docProps/app.xml"
	if !c.Has(part) {
		return 0
	}
	rc, err := c.Open(part)
	if err != nil {
		return 0
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.Token()
		if err != nil {
			return 0
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Pages" {
			var v string
			if d.DecodeElement(&v, &se) != nil {
				return 0
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return 0
			}
			return n
		}
	}
}

type docxStyle struct {
	name, basedOn string
	outline       int // 0: none; else the heading level
	numID         string
	ilvl          int
}

type docxLevel struct {
	format, text string
	start        int
}

type docxNum struct {
	abstract string
	levels   map[int]docxLevel
}

type docxReader struct {
	styles    map[string]*docxStyle
	abstract  map[string]map[int]docxLevel
	nums      map[string]*docxNum
	counters  map[string][]int // by abstract numbering
	noteOrder []string
	noteLabel map[string]string
	notePage  map[string]int // the page of a footnote's first reference
	pg        pager
	span      span
}

const wordNS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

func wAttr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local && (a.Name.Space == wordNS || a.Name.Space == "") {
			return a.Value
		}
	}
	return ""
}

func anyAttr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func (r *docxReader) readStyles(c *zipparts.Container) error {
	rc, err := c.Open("word/styles.xml")
	if err != nil {
		return err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	var cur *docxStyle
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "style":
			cur = &docxStyle{ilvl: -1}
			r.styles[wAttr(se, "styleId")] = cur
		case "name":
			if cur != nil {
				cur.name = strings.ToLower(wAttr(se, "val"))
			}
		case "basedOn":
			if cur != nil {
				cur.basedOn = wAttr(se, "val")
			}
		case "outlineLvl":
			if cur != nil {
				if n, err := strconv.Atoi(wAttr(se, "val")); err == nil && n < 9 {
					cur.outline = n + 1
				}
			}
		case "numId":
			if cur != nil {
				cur.numID = wAttr(se, "val")
			}
		case "ilvl":
			if cur != nil {
				cur.ilvl, _ = strconv.Atoi(wAttr(se, "val"))
			}
		}
	}
}

// headingLevel is a style's heading level, following basedOn: Title is 1, "heading N"
// is N, else its outline level.
func (r *docxReader) headingLevel(id string) int {
	for range 10 {
		s := r.styles[id]
		if s == nil {
			return 0
		}
		switch {
		case s.name == "title":
			return 1
		case strings.HasPrefix(s.name, "heading "):
			if n, err := strconv.Atoi(strings.TrimPrefix(s.name, "heading ")); err == nil && n >= 1 {
				return min(n, 6)
			}
		}
		if s.outline > 0 {
			return min(s.outline, 6)
		}
		id = s.basedOn
	}
	return 0
}

func (r *docxReader) styleNum(id string) (string, int) {
	for range 10 {
		s := r.styles[id]
		if s == nil {
			return "", 0
		}
		if s.numID != "" {
			return s.numID, max(s.ilvl, 0)
		}
		id = s.basedOn
	}
	return "", 0
}

func (r *docxReader) readNumbering(c *zipparts.Container) error {
	rc, err := c.Open("word/numbering.xml")
	if err != nil {
		return err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	r.abstract = map[string]map[int]docxLevel{}
	var abs map[int]docxLevel
	var num *docxNum
	lvl := -1
	var cur docxLevel
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "abstractNum":
				abs = map[int]docxLevel{}
				r.abstract[wAttr(t, "abstractNumId")] = abs
				num = nil
			case "num":
				num = &docxNum{levels: map[int]docxLevel{}}
				r.nums[wAttr(t, "numId")] = num
				abs = nil
			case "abstractNumId":
				if num != nil {
					num.abstract = wAttr(t, "val")
				}
			case "lvl":
				lvl, _ = strconv.Atoi(wAttr(t, "ilvl"))
				cur = docxLevel{start: 1}
			case "numFmt":
				cur.format = wAttr(t, "val")
			case "lvlText":
				cur.text = wAttr(t, "val")
			case "start":
				cur.start, _ = strconv.Atoi(wAttr(t, "val"))
			}
		case xml.EndElement:
			if t.Name.Local == "lvl" && lvl >= 0 {
				if abs != nil {
					abs[lvl] = cur
				} else if num != nil {
					num.levels[lvl] = cur // a level override
				}
				lvl = -1
			}
		}
	}
	return nil
}

func (r *docxReader) level(numID string, ilvl int) (docxLevel, string, bool) {
	n := r.nums[numID]
	if n == nil {
		return docxLevel{}, "", false
	}
	if l, ok := n.levels[ilvl]; ok && l.format != "" {
		return l, n.abstract, true
	}
	l, ok := r.abstract[n.abstract][ilvl]
	return l, n.abstract, ok
}

// marker counts an item of a numbered list and writes its number as its level's
// text says ("%1.", "%1.%2)").
func (r *docxReader) marker(numID string, ilvl int) (string, bool) {
	l, abs, ok := r.level(numID, ilvl)
	if !ok || l.format == "bullet" || l.format == "none" || l.format == "" {
		return "", false
	}
	key := abs + "/" + numID
	cs := r.counters[key]
	for len(cs) <= ilvl {
		cs = append(cs, 0)
	}
	cs = cs[:ilvl+1]
	if cs[ilvl] == 0 {
		cs[ilvl] = max(l.start, 0)
	} else {
		cs[ilvl]++
	}
	r.counters[key] = cs
	text := l.text
	if text == "" {
		text = "%" + strconv.Itoa(ilvl+1) + "."
	}
	for i := ilvl; i >= 0; i-- {
		li, _, _ := r.level(numID, i)
		n := cs[i]
		if n == 0 {
			n = max(li.start, 1)
		}
		text = strings.ReplaceAll(text, "%"+strconv.Itoa(i+1), formatNumber(n, li.format))
	}
	return strings.TrimSpace(text), true
}

// formatNumber writes n in a list's numbering format.
func formatNumber(n int, format string) string {
	switch format {
	case "lowerLetter":
		return letters(n, 'a')
	case "upperLetter":
		return letters(n, 'A')
	case "lowerRoman":
		return strings.ToLower(roman(n))
	case "upperRoman":
		return roman(n)
	}
	return strconv.Itoa(n)
}

func letters(n int, base rune) string {
	if n < 1 {
		return strconv.Itoa(n)
	}
	r := rune(base) + rune((n-1)%26)
	return strings.Repeat(string(r), (n-1)/26+1)
}

func roman(n int) string {
	if n < 1 || n > 3999 {
		return strconv.Itoa(n)
	}
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var b strings.Builder
	for i, v := range vals {
		for n >= v {
			b.WriteString(syms[i])
			n -= v
		}
	}
	return b.String()
}

// readNotes reads footnotes (or endnotes): their text by id, separators aside.
func (r *docxReader) readNotes(c *zipparts.Container, part string) (map[string]string, error) {
	rc, err := c.Open(part)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	out := map[string]string{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || (se.Name.Local != "footnote" && se.Name.Local != "endnote") {
			continue
		}
		id, typ := wAttr(se, "id"), wAttr(se, "type")
		blocks, err := r.container(d, se.Name.Local)
		if err != nil {
			return nil, err
		}
		if typ != "" && typ != "normal" {
			continue
		}
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		out[id] = strings.Join(parts, " ")
	}
}

// body reads the document body.
func (r *docxReader) body(d *xml.Decoder) ([]*Block, error) {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil, errors.New("docstruct: no document body")
		}
		if err != nil {
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "body" {
			return r.container(d, "body")
		}
	}
}

// container reads block content (paragraphs, tables) up to the end of the element
// named end: the body, a table cell, a footnote, a content control.
func (r *docxReader) container(d *xml.Decoder, end string) ([]*Block, error) {
	var out []*Block
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				bs, err := r.para(d)
				if err != nil {
					return nil, err
				}
				out = append(out, bs...)
			case "tbl":
				b, err := r.table(d)
				if err != nil {
					return nil, err
				}
				if b != nil {
					out = append(out, b)
				}
			case "sectPr", "del", "moveFrom":
				if err := d.Skip(); err != nil {
					return nil, err
				}
			}
			// Anything else (sdt, sdtContent, customXml, ins) is transparent.
		case xml.EndElement:
			if t.Name.Local == end {
				return out, nil
			}
		}
	}
}

// para reads a paragraph: its style and numbering, its text, and the images and text
// boxes in it (which follow it as blocks of their own).
func (r *docxReader) para(d *xml.Decoder) ([]*Block, error) {
	var (
		text         strings.Builder
		style, numID string
		ilvl         = -1
		outline      = 0
		after        []*Block
		inPPr        bool
		depth        = 0
	)
	outer := r.begin()
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "pPr":
				inPPr = true
			case "pStyle":
				if inPPr {
					style = wAttr(t, "val")
				}
			case "numId":
				if inPPr {
					numID = wAttr(t, "val")
				}
			case "ilvl":
				if inPPr {
					ilvl, _ = strconv.Atoi(wAttr(t, "val"))
				}
			case "outlineLvl":
				if inPPr {
					if n, err := strconv.Atoi(wAttr(t, "val")); err == nil && n < 9 {
						outline = n + 1
					}
				}
			case "rPr":
				if inPPr {
					// The paragraph mark's run properties: nothing of the text.
					if err := d.Skip(); err != nil {
						return nil, err
					}
					depth--
				}
			case "t":
				var s string
				if err := d.DecodeElement(&s, &t); err != nil {
					return nil, err
				}
				depth--
				if strings.TrimSpace(s) != "" {
					r.text()
				}
				text.WriteString(s)
			case "lastRenderedPageBreak":
				r.pg.renderedBreak()
			case "pageBreakBefore":
				// Ignored at the top of the document, as Word does.
				if v := wAttr(t, "val"); inPPr && r.pg.text && v != "0" && v != "false" && v != "off" {
					r.pg.hard()
				}
			case "tab", "br", "cr":
				if !inPPr {
					text.WriteByte(' ')
					if t.Name.Local == "br" && wAttr(t, "type") == "page" {
						r.pg.hard()
					}
				}
			case "noBreakHyphen":
				text.WriteByte('-')
			case "sym":
				if ch := wAttr(t, "char"); ch != "" {
					if v, err := strconv.ParseUint(ch, 16, 32); err == nil && v >= 0x20 && !(v >= 0xE000 && v <= 0xF8FF) {
						r.text()
						text.WriteRune(rune(v))
					}
				}
			case "footnoteReference", "endnoteReference":
				id := wAttr(t, "id")
				label, ok := r.noteLabel[id]
				if !ok {
					label = strconv.Itoa(len(r.noteOrder) + 1)
					r.noteLabel[id] = label
					r.noteOrder = append(r.noteOrder, id)
					r.notePage[id] = r.pg.page + r.pg.pending
				}
				text.WriteString("[^" + label + "]")
			case "docPr":
				// An image (or a shape) drawn in the run: its description is its alt text.
				alt := anyAttr(t, "descr")
				if alt == "" {
					alt = anyAttr(t, "title")
				}
				pg := r.pg.at()
				after = append(after, &Block{Kind: Image, Text: cleanText(alt), Pages: []int{pg}})
			case "txbxContent":
				bs, err := r.container(d, "txbxContent")
				if err != nil {
					return nil, err
				}
				depth--
				after = append(after, bs...)
			case "Fallback", "delText", "instrText", "del", "moveFrom", "pict":
				// The fallback of alternate content repeats the choice; deleted text
				// and field codes are not the text; VML pictures repeat a drawing.
				if t.Name.Local == "pict" {
					if alt := vmlTitle(t); alt != "" {
						pg := r.pg.at()
						after = append(after, &Block{Kind: Image, Text: alt, Pages: []int{pg}})
					}
				}
				if err := d.Skip(); err != nil {
					return nil, err
				}
				depth--
			case "rPrChange", "pPrChange":
				// Tracked formatting changes hold the old properties, not the current.
				if err := d.Skip(); err != nil {
					return nil, err
				}
				depth--
			}
		case xml.EndElement:
			if depth == 0 && t.Name.Local == "p" {
				sp := r.end(outer)
				return r.paraBlocks(cleanText(text.String()), style, numID, ilvl, outline, PageSpan(sp.first, sp.last), after), nil
			}
			depth--
			if t.Name.Local == "pPr" {
				inPPr = false
			}
		}
	}
}

func vmlTitle(se xml.StartElement) string { return cleanText(anyAttr(se, "title")) }

func (r *docxReader) paraBlocks(text, style, numID string, ilvl, outline int, pages []int, after []*Block) []*Block {
	var out []*Block
	if text != "" {
		b := &Block{Kind: Paragraph, Text: text, Pages: pages}
		level := r.headingLevel(style)
		if level == 0 && outline > 0 {
			level = min(outline, 6)
		}
		if numID == "" {
			numID, ilvl = r.styleNum(style)
		}
		switch {
		case level > 0:
			b.Kind, b.Level = Heading, level
		case numID != "" && numID != "0":
			ilvl = max(ilvl, 0)
			b.Kind, b.Level = ListItem, min(ilvl, 8)
			b.Marker, b.Ordered = r.marker(numID, ilvl)
		}
		out = append(out, b)
	}
	return append(out, after...)
}

// table reads a table: rows of cells, each cell's blocks as its text; gridSpan
// repeats a cell across, vMerge continues the cell above.
func (r *docxReader) table(d *xml.Decoder) (*Block, error) {
	var (
		rows       [][]string
		rowPages   [][]int
		headerRows = 0
		body       = false
	)
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local != "tr" {
				if t.Name.Local == "tblPr" || t.Name.Local == "tblGrid" {
					if err := d.Skip(); err != nil {
						return nil, err
					}
				}
				continue
			}
			outer := r.begin()
			row, cont, header, err := r.row(d)
			if err != nil {
				return nil, err
			}
			sp := r.end(outer)
			rowPages = append(rowPages, PageSpan(sp.first, sp.last))
			if header && !body {
				headerRows++
			} else {
				body = true
			}
			// A continued vertical merge repeats the text of the cell above.
			if n := len(rows); n > 0 {
				for i := range row {
					if cont[i] && i < len(rows[n-1]) {
						row[i] = rows[n-1][i]
					}
				}
			}
			rows = append(rows, row)
		case xml.EndElement:
			if t.Name.Local == "tbl" {
				if headerRows == 0 {
					headerRows = 1
				}
				b := newTable(rows, headerRows)
				if b != nil {
					b.RowPages = tablePages(rows, rowPages, headerRows)
					for _, p := range b.RowPages {
						b.Pages = mergePages(b.Pages, p)
					}
				}
				return b, nil
			}
		}
	}
}

// row reads a table row: the cells' texts on the grid, which positions continue a
// vertical merge, and whether the row is a header row.
func (r *docxReader) row(d *xml.Decoder) ([]string, []bool, bool, error) {
	var (
		cells  []string
		cont   []bool
		header bool
	)
	// Each cell starts where the row does; the row ends where its longest cell does
	// (a row carried to the next page has a rendered break in every cell that goes on).
	start, end := r.pg, r.pg
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, false, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "gridBefore":
				n, _ := strconv.Atoi(wAttr(t, "val"))
				for range min(n, maxSpan) {
					cells = append(cells, "")
					cont = append(cont, false)
				}
			case "tblHeader":
				v := wAttr(t, "val")
				header = v == "" || v == "1" || v == "true" || v == "on"
			case "tc":
				r.pg.page, r.pg.pending = start.page, start.pending
				text, span, vcont, err := r.cell(d)
				if err != nil {
					return nil, nil, false, err
				}
				if r.pg.after(end) {
					end = r.pg
				}
				for range span {
					cells = append(cells, text)
					cont = append(cont, vcont)
				}
			}
		case xml.EndElement:
			if t.Name.Local == "tr" {
				r.pg.page, r.pg.pending = end.page, end.pending
				return cells, cont, header, nil
			}
		}
	}
}

func (r *docxReader) cell(d *xml.Decoder) (string, int, bool, error) {
	span, vcont := 1, false
	var parts []string
	for {
		tok, err := d.Token()
		if err != nil {
			return "", 0, false, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "gridSpan":
				n, _ := strconv.Atoi(wAttr(t, "val"))
				span = min(max(n, 1), maxSpan)
			case "vMerge":
				v := wAttr(t, "val")
				vcont = v == "" || v == "continue"
			case "p":
				bs, err := r.para(d)
				if err != nil {
					return "", 0, false, err
				}
				for _, b := range bs {
					if b.Kind == Image {
						continue
					}
					if b.Text != "" {
						parts = append(parts, b.Text)
					}
				}
			case "tbl":
				b, err := r.table(d)
				if err != nil {
					return "", 0, false, err
				}
				if b != nil {
					for _, row := range b.Rows {
						parts = append(parts, strings.Join(row, " "))
					}
				}
			}
		case xml.EndElement:
			if t.Name.Local == "tc" {
				return strings.Join(parts, " "), span, vcont, nil
			}
		}
	}
}

// tablePages are the pages of the rows newTable(rows, headerRows) keeps: rows
// without text dropped, header rows joined into one.
func tablePages(rows [][]string, pages [][]int, headerRows int) [][]int {
	var out [][]int
	for i, r := range rows {
		for _, c := range r {
			if cleanText(c) != "" {
				out = append(out, pages[i])
				break
			}
		}
	}
	if headerRows > 1 && headerRows < len(out) {
		var head []int
		for _, p := range out[:headerRows] {
			head = mergePages(head, p)
		}
		out = append([][]int{head}, out[headerRows:]...)
	}
	return out
}

// mergePages is the pages of a and b, ascending, without repeats.
func mergePages(a, b []int) []int {
	for _, p := range b {
		i, found := slices.BinarySearch(a, p)
		if !found {
			a = slices.Insert(a, i, p)
		}
	}
	return a
}

// PagedDOCX reports whether ReadDOCX gives the DOCX at path its pages from the breaks
// it saved (PageSourceHints). A document without a rendered page break (as every
// DOCX LibreOffice saves) is told by a scan of its body's bytes, unread.
func PagedDOCX(path string, lim zipparts.Limits) bool {
	c, err := zipparts.Open(path, lim)
	if err != nil {
		return false
	}
	defer c.Close()
	rendered := false
	if c.Has("word/document.xml") && appPages(c) > 0 {
		rendered = partContains(c, "word/document.xml", []byte("lastRenderedPageBreak"))
	}
	if !rendered {
		return false
	}
	// The body alone tells the pages: styles, numbering and notes are not read.
	r := &docxReader{styles: map[string]*docxStyle{}, nums: map[string]*docxNum{}, counters: map[string][]int{}, noteLabel: map[string]string{},
		notePage: map[string]int{}, pg: pager{page: 1}}
	rc, err := c.Open("word/document.xml")
	if err != nil {
		return false
	}
	defer rc.Close()
	if _, err := r.body(xml.NewDecoder(rc)); err != nil {
		return false
	}
	return r.hinted(c) > 0
}

// partContains reports whether the part's bytes hold s.
func partContains(c *zipparts.Container, part string, s []byte) bool {
	rc, err := c.Open(part)
	if err != nil {
		return false
	}
	defer rc.Close()
	buf := make([]byte, 64<<10)
	keep := 0 // bytes of the last read kept for a match across reads
	for {
		n, err := io.ReadFull(rc, buf[keep:])
		if bytes.Contains(buf[:keep+n], s) {
			return true
		}
		if err != nil {
			return false
		}
		end := keep + n
		keep = min(len(s)-1, end)
		copy(buf, buf[end-keep:end])
	}
}
