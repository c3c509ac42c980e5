package docstruct

import (
	"io"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ReadHTML reads an HTML page's structure: h1–h6, paragraphs, nested ul/ol lists,
// tables (th rows and thead as the header, colspan and rowspan repeated), images by
// their alt text, pre as code. Scripts, styles and the head are not content.
func ReadHTML(r io.Reader) (*Document, error) {
	root, err := html.Parse(r)
	if err != nil {
		return nil, err
	}
	h := &htmlReader{}
	h.blocks(root, -1)
	h.flush()
	return &Document{Blocks: h.out}, nil
}

type htmlReader struct {
	out    []*Block
	inline strings.Builder
}

func (h *htmlReader) flush() {
	if t := cleanText(h.inline.String()); t != "" {
		h.out = append(h.out, &Block{Kind: Paragraph, Text: t})
	}
	h.inline.Reset()
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

func skipped(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Head, atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Iframe, atom.Object, atom.Svg, atom.Button, atom.Select:
		return true
	}
	return false
}

// blocks reads n's children; depth is the list depth inside a list item, -1 outside.
func (h *htmlReader) blocks(n *html.Node, depth int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			h.inline.WriteString(c.Data)
			continue
		case html.ElementNode, html.DocumentNode:
		default:
			continue
		}
		if skipped(c) {
			continue
		}
		switch c.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			h.flush()
			if t := cleanText(inlineText(c)); t != "" {
				h.out = append(h.out, &Block{Kind: Heading, Level: int(c.Data[1] - '0'), Text: t})
			}
		case atom.Ul, atom.Ol:
			h.flush()
			h.list(c, depth+1)
		case atom.Table:
			h.flush()
			if t := htmlTable(c); t != nil {
				h.out = append(h.out, t)
			}
		case atom.Img:
			h.flush()
			h.out = append(h.out, &Block{Kind: Image, Text: cleanText(attr(c, "alt"))})
		case atom.Pre:
			h.flush()
			if t := strings.Trim(rawText(c), "\n"); strings.TrimSpace(t) != "" {
				h.out = append(h.out, &Block{Kind: Code, Text: t})
			}
		case atom.Br:
			h.inline.WriteByte(' ')
		case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Aside, atom.Nav,
			atom.Blockquote, atom.Figure, atom.Figcaption, atom.Dl, atom.Dt, atom.Dd, atom.Address, atom.Li,
			atom.Body, atom.Html, atom.Form, atom.Fieldset, atom.Details, atom.Summary, atom.Center, atom.Hr:
			h.flush()
			h.blocks(c, depth)
			h.flush()
		default:
			// Inline elements: their text joins the paragraph, their block children
			// (rare, but HTML allows a div in a span) read as blocks.
			if hasBlockChild(c) {
				h.blocks(c, depth)
			} else {
				h.inline.WriteString(inlineText(c))
			}
		}
	}
}

func hasBlockChild(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.P, atom.Div, atom.Ul, atom.Ol, atom.Table, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Pre, atom.Img, atom.Blockquote:
			return true
		}
		if hasBlockChild(c) {
			return true
		}
	}
	return false
}

// list reads a ul or ol at depth: each li's own text is an item; lists inside it are
// deeper; other blocks inside it follow as blocks.
func (h *htmlReader) list(n *html.Node, depth int) {
	ordered := n.DataAtom == atom.Ol
	num := 1
	if s, err := strconv.Atoi(attr(n, "start")); err == nil {
		num = s
	}
	for li := n.FirstChild; li != nil; li = li.NextSibling {
		if li.Type != html.ElementNode {
			continue
		}
		if li.DataAtom != atom.Li {
			if li.DataAtom == atom.Ul || li.DataAtom == atom.Ol {
				h.list(li, depth+1)
			}
			continue
		}
		if v, err := strconv.Atoi(attr(li, "value")); err == nil {
			num = v
		}
		item := &Block{Kind: ListItem, Level: min(depth, 8), Ordered: ordered}
		if ordered {
			item.Marker = strconv.Itoa(num) + "."
			num++
		}
		h.out = append(h.out, item)
		sub := &htmlReader{}
		sub.blocks(li, depth)
		sub.flush()
		var rest []*Block
		item.Text, rest = itemText(sub.out)
		h.out = append(h.out, rest...)
	}
}

// inlineText is an element's text as read inline: images by their alt text.
func inlineText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(c.Data)
			case c.Type == html.ElementNode && skipped(c):
			case c.Type == html.ElementNode && c.DataAtom == atom.Br:
				b.WriteByte(' ')
			case c.Type == html.ElementNode:
				if isBlockTag(c.DataAtom) {
					b.WriteByte(' ')
				}
				walk(c)
				if isBlockTag(c.DataAtom) {
					b.WriteByte(' ')
				}
			}
		}
	}
	walk(n)
	return b.String()
}

func isBlockTag(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Li, atom.Ul, atom.Ol, atom.Table, atom.Tr, atom.Td, atom.Th, atom.H1, atom.H2, atom.H3,
		atom.H4, atom.H5, atom.H6, atom.Pre, atom.Blockquote, atom.Dt, atom.Dd:
		return true
	}
	return false
}

func rawText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			} else if c.Type == html.ElementNode && c.DataAtom == atom.Br {
				b.WriteByte('\n')
			} else {
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// htmlTable reads a table into a grid, spans repeated.
func htmlTable(t *html.Node) *Block {
	var g grid
	headerRows := 0
	body := false
	var rows func(n *html.Node, inHead bool)
	rows = func(n *html.Node, inHead bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Thead:
				rows(c, true)
			case atom.Tbody, atom.Tfoot:
				rows(c, false)
			case atom.Tr:
				allTH, any := true, false
				g.newRow()
				for cell := c.FirstChild; cell != nil; cell = cell.NextSibling {
					if cell.Type != html.ElementNode || (cell.DataAtom != atom.Td && cell.DataAtom != atom.Th) {
						continue
					}
					any = true
					allTH = allTH && cell.DataAtom == atom.Th
					cs, _ := strconv.Atoi(attr(cell, "colspan"))
					rs, _ := strconv.Atoi(attr(cell, "rowspan"))
					g.add(cleanText(inlineText(cell)), cs, rs)
				}
				if !body && any && (inHead || allTH) {
					headerRows++
				} else {
					body = true
				}
			}
		}
	}
	rows(t, false)
	g.finishRow()
	return newTable(g.rows, headerRows)
}

// grid lays cells with spans out on a grid, repeating a spanning cell's text over
// the positions it covers.
type grid struct {
	rows [][]string
	// pending holds the cells of rows above that reach down into later rows: by
	// column, the text and how many rows more.
	pending map[int]spanCell
	col     int
}

type spanCell struct {
	text string
	left int
}

// maxSpan bounds a span: a table's spans are small; a huge one is an attack on memory.
const maxSpan = 1000

func (g *grid) newRow() {
	g.finishRow()
	g.rows = append(g.rows, nil)
	g.col = 0
	g.fillPending()
}

// finishRow fills the positions of the last row that cells from above still cover.
func (g *grid) finishRow() {
	if len(g.rows) == 0 {
		return
	}
	for {
		next := -1
		for c := range g.pending {
			if c >= g.col && (next < 0 || c < next) {
				next = c
			}
		}
		if next < 0 {
			return
		}
		r := len(g.rows) - 1
		for len(g.rows[r]) < next {
			g.rows[r] = append(g.rows[r], "")
		}
		g.col = next
		g.fillPending()
	}
}

func (g *grid) fillPending() {
	r := len(g.rows) - 1
	for {
		p, ok := g.pending[g.col]
		if !ok || p.left <= 0 {
			return
		}
		g.rows[r] = append(g.rows[r], p.text)
		p.left--
		if p.left == 0 {
			delete(g.pending, g.col)
		} else {
			g.pending[g.col] = p
		}
		g.col++
	}
}

func (g *grid) add(text string, colspan, rowspan int) {
	if len(g.rows) == 0 {
		g.newRow()
	}
	colspan = min(max(colspan, 1), maxSpan)
	rowspan = min(max(rowspan, 1), maxSpan)
	r := len(g.rows) - 1
	for range colspan {
		for len(g.rows[r]) < g.col {
			g.rows[r] = append(g.rows[r], "")
		}
		g.rows[r] = append(g.rows[r], text)
		if rowspan > 1 {
			if g.pending == nil {
				g.pending = map[int]spanCell{}
			}
			g.pending[g.col] = spanCell{text, rowspan - 1}
		}
		g.col++
		g.fillPending()
	}
}
