package docstruct

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// ReadODF reads an OpenDocument text, spreadsheet or presentation from its
// content.xml: headings by outline level, nested lists (numbered where their list
// style says), tables with header rows and spans, images by title or description,
// footnotes; a spreadsheet's sheets as for XLSX (ODF stores the displayed text); a
// presentation's pages as for PPTX.
func ReadODF(path string, lim zipparts.Limits) (*Document, error) {
	c, err := zipparts.Open(path, lim)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rc, err := c.Open("content.xml")
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	root, err := parseTree(xml.NewDecoder(rc))
	if err != nil {
		return nil, err
	}
	root = root.element()
	o := &odfReader{listStyles: map[string]map[int]bool{}}
	if auto := root.child("automatic-styles"); auto != nil {
		o.readListStyles(auto)
	}
	if c.Has("styles.xml") {
		if src, err := c.ReadAll("styles.xml"); err == nil {
			if sroot, err := parseTree(xml.NewDecoder(strings.NewReader(string(src)))); err == nil {
				for _, name := range []string{"styles", "automatic-styles"} {
					if st := sroot.element().child(name); st != nil {
						o.readListStyles(st)
					}
				}
			}
		}
	}
	body := root.child("body")
	if body == nil {
		return nil, fmt.Errorf("docstruct: content.xml has no body")
	}
	for _, kind := range body.kids {
		switch kind.name {
		case "text":
			o.blocks(kind)
		case "spreadsheet":
			for _, t := range kind.kids {
				if t.name == "table" {
					o.out = append(o.out, &Block{Kind: Heading, Level: 1, Text: cleanText(t.attr("name"))})
					if b := o.table(t); b != nil {
						o.out = append(o.out, b)
					}
				}
			}
		case "presentation":
			o.presentation(kind)
		}
	}
	o.out = append(o.out, o.notes...)
	return &Document{Blocks: o.out}, nil
}

// node is an element of a parsed XML tree, or a text node (name "").
type node struct {
	name  string
	attrs []xml.Attr
	kids  []*node
	text  string
}

func (n *node) attr(local string) string {
	for _, a := range n.attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// element is a parsed part's root element.
func (n *node) element() *node {
	for _, k := range n.kids {
		if k.name != "" {
			return k
		}
	}
	return n
}

func (n *node) child(local string) *node {
	for _, k := range n.kids {
		if k.name == local {
			return k
		}
	}
	return nil
}

// maxTreeNodes bounds the elements of a parsed part, each a node held in memory: a
// thousand-page text or a sheet of a million cells has fewer, and a part of tiny
// empty elements (13 million of them deflate to 240 KB) is refused early.
const maxTreeNodes = 4_000_000

func parseTree(d *xml.Decoder) (*node, error) {
	root := &node{}
	stack := []*node{root}
	count := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return root, nil
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			if count++; count > maxTreeNodes {
				return nil, fmt.Errorf("%w: too many elements", zipparts.ErrTooLarge)
			}
			n := &node{name: t.Name.Local, attrs: t.Attr}
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return root, nil
			}
		case xml.CharData:
			if len(stack) > 1 {
				top.kids = append(top.kids, &node{text: string(t)})
			}
		}
	}
}

type odfReader struct {
	out        []*Block
	notes      []*Block
	listStyles map[string]map[int]bool // style → level (1-based) → numbered
}

func (o *odfReader) readListStyles(n *node) {
	for _, s := range n.kids {
		if s.name != "list-style" {
			continue
		}
		levels := map[int]bool{}
		for _, l := range s.kids {
			lv, _ := strconv.Atoi(l.attr("level"))
			switch l.name {
			case "list-level-style-number":
				levels[lv] = l.attr("num-format") != ""
			case "list-level-style-bullet", "list-level-style-image":
				levels[lv] = false
			}
		}
		o.listStyles[s.attr("name")] = levels
	}
}

// blocks reads text content: headings, paragraphs, lists, tables, sections.
func (o *odfReader) blocks(n *node) {
	for _, k := range n.kids {
		switch k.name {
		case "h":
			lv, _ := strconv.Atoi(k.attr("outline-level"))
			t, after := o.inline(k)
			if t != "" {
				o.out = append(o.out, &Block{Kind: Heading, Level: min(max(lv, 1), 6), Text: t})
			}
			o.out = append(o.out, after...)
		case "p":
			t, after := o.inline(k)
			if t != "" {
				o.out = append(o.out, &Block{Kind: Paragraph, Text: t})
			}
			o.out = append(o.out, after...)
		case "list":
			o.list(k, 0, k.attr("style-name"), map[int]int{})
		case "table":
			if b := o.table(k); b != nil {
				o.out = append(o.out, b)
			}
		case "section", "div", "index-body", "table-of-content", "alphabetical-index", "illustration-index", "change-deletion", "tracked-changes":
			if k.name == "tracked-changes" || k.name == "change-deletion" {
				continue
			}
			o.blocks(k)
		}
	}
}

func (o *odfReader) list(n *node, depth int, style string, counters map[int]int) {
	if s := n.attr("style-name"); s != "" {
		style = s
	}
	ordered := o.listStyles[style][depth+1]
	for _, it := range n.kids {
		if it.name != "list-item" && it.name != "list-header" {
			continue
		}
		var item *Block
		for _, k := range it.kids {
			switch k.name {
			case "p", "h":
				t, after := o.inline(k)
				if item == nil {
					item = &Block{Kind: ListItem, Level: min(depth, 8), Ordered: ordered}
					if ordered {
						counters[depth]++
						for l := range counters {
							if l > depth {
								delete(counters, l)
							}
						}
						item.Marker = strconv.Itoa(counters[depth]) + "."
					}
					o.out = append(o.out, item)
				}
				if t != "" {
					item.Text = strings.TrimSpace(item.Text + " " + t)
				}
				o.out = append(o.out, after...)
			case "list":
				o.list(k, depth+1, style, counters)
			case "table":
				if b := o.table(k); b != nil {
					o.out = append(o.out, b)
				}
			}
		}
		if item != nil && item.Text == "" {
			// An item with no text of its own (only a nested list) is no item.
			for i, b := range o.out {
				if b == item {
					o.out = append(o.out[:i], o.out[i+1:]...)
					break
				}
			}
		}
	}
}

// inline reads a paragraph's text; images and text boxes in it follow as blocks.
func (o *odfReader) inline(n *node) (string, []*Block) {
	var b strings.Builder
	var after []*Block
	var walk func(*node)
	walk = func(n *node) {
		for _, k := range n.kids {
			switch k.name {
			case "":
				b.WriteString(k.text)
			case "s":
				c, _ := strconv.Atoi(k.attr("c"))
				b.WriteString(strings.Repeat(" ", min(max(c, 1), 100)))
			case "tab", "line-break":
				b.WriteByte(' ')
			case "note":
				label := strconv.Itoa(len(o.notes) + 1)
				b.WriteString("[^" + label + "]")
				var parts []string
				if body := k.child("note-body"); body != nil {
					sub := &odfReader{listStyles: o.listStyles}
					sub.blocks(body)
					for _, x := range sub.out {
						parts = append(parts, x.Text)
					}
				}
				o.notes = append(o.notes, &Block{Kind: Footnote, Label: label, Text: strings.Join(parts, " ")})
			case "frame":
				if tb := k.child("text-box"); tb != nil {
					sub := &odfReader{listStyles: o.listStyles}
					sub.blocks(tb)
					after = append(after, sub.out...)
					o.notes = append(o.notes, sub.notes...)
				} else if k.child("image") != nil || k.child("object") != nil {
					after = append(after, &Block{Kind: Image, Text: frameAlt(k)})
				}
			case "annotation", "bookmark", "soft-page-break", "change", "change-start", "change-end", "sequence-decls", "note-citation":
			default:
				walk(k)
			}
		}
	}
	walk(n)
	return cleanText(b.String()), after
}

func frameAlt(f *node) string {
	for _, name := range []string{"desc", "title"} {
		if d := f.child(name); d != nil {
			var b strings.Builder
			for _, k := range d.kids {
				b.WriteString(k.text)
			}
			if t := cleanText(b.String()); t != "" {
				return t
			}
		}
	}
	return ""
}

// table reads a table: header rows first, spans repeated, repeated rows and columns
// expanded where they hold text.
func (o *odfReader) table(t *node) *Block {
	var rows [][]string
	headerRows := 0
	var addRows func(n *node, header bool)
	addRows = func(n *node, header bool) {
		for _, r := range n.kids {
			switch r.name {
			case "table-header-rows":
				addRows(r, true)
			case "table-rows", "table-row-group":
				addRows(r, header)
			case "table-row":
				row := o.row(r, rows)
				rep, _ := strconv.Atoi(r.attr("number-rows-repeated"))
				rep = max(rep, 1)
				if strings.Join(row, "") == "" {
					rep = 1
				}
				for range min(rep, 1000) {
					rows = append(rows, row)
					if header {
						headerRows++
					}
				}
			}
		}
	}
	addRows(t, false)
	if headerRows == 0 || headerRows >= len(rows) {
		headerRows = 1
	}
	return newTable(rows, headerRows)
}

func (o *odfReader) row(r *node, above [][]string) []string {
	// Each cell element, covered ones too, is one position of the grid: a spanning
	// cell is followed by the covered cells of its span; a covered cell not in a
	// span from the left is in one from above.
	var row []string
	pendingEmpty := 0
	spanText, spanLeft := "", 0
	for _, c := range r.kids {
		if c.name != "table-cell" && c.name != "covered-table-cell" {
			continue
		}
		rep, _ := strconv.Atoi(c.attr("number-columns-repeated"))
		rep = max(rep, 1)
		var text string
		if c.name == "table-cell" {
			var parts []string
			for _, k := range c.kids {
				switch k.name {
				case "p", "h":
					if t, _ := o.inline(k); t != "" {
						parts = append(parts, t)
					}
				case "list":
					sub := &odfReader{listStyles: o.listStyles}
					sub.list(k, 0, k.attr("style-name"), map[int]int{})
					for _, b := range sub.out {
						parts = append(parts, b.Text)
					}
				}
			}
			text = strings.Join(parts, " ")
			span, _ := strconv.Atoi(c.attr("number-columns-spanned"))
			spanText, spanLeft = text, min(max(span, 1), maxSpan)-1
		}
		for range min(rep, 16384) {
			col := len(row) + pendingEmpty
			cell := text
			if c.name == "covered-table-cell" {
				if spanLeft > 0 {
					cell = spanText
					spanLeft--
				} else if n := len(above); n > 0 && col < len(above[n-1]) {
					cell = above[n-1][col]
				}
			}
			if cell == "" {
				if pendingEmpty++; len(row)+pendingEmpty > 16384 {
					return row
				}
				continue
			}
			for ; pendingEmpty > 0; pendingEmpty-- {
				row = append(row, "")
			}
			row = append(row, cell)
		}
	}
	return row
}

// presentation reads draw:page elements as slides.
func (o *odfReader) presentation(n *node) {
	shown := 0
	for _, page := range n.kids {
		if page.name != "page" {
			continue
		}
		shown++
		o.out = append(o.out, &Block{Kind: Section, Text: "Slide " + strconv.Itoa(shown)})
		var title []*Block
		var rest []*Block
		var notes []string
		for _, f := range page.kids {
			switch f.name {
			case "frame", "custom-shape":
				class := f.attr("class")
				sub := &odfReader{listStyles: o.listStyles}
				if tb := f.child("text-box"); tb != nil {
					sub.slideText(tb, class)
				} else if f.name == "custom-shape" {
					sub.slideText(f, class)
				} else if tab := f.child("table"); tab != nil {
					if b := sub.table(tab); b != nil {
						sub.out = append(sub.out, b)
					}
				} else if f.child("image") != nil {
					sub.out = append(sub.out, &Block{Kind: Image, Text: frameAlt(f)})
				}
				if class == "title" {
					var parts []string
					for _, b := range sub.out {
						parts = append(parts, b.Text)
					}
					if t := cleanText(strings.Join(parts, " ")); t != "" {
						title = append(title, &Block{Kind: Heading, Level: 1, Text: t})
					}
					continue
				}
				rest = append(rest, sub.out...)
			case "notes":
				for _, nf := range f.kids {
					if nf.name == "frame" && nf.attr("class") == "notes" {
						if tb := nf.child("text-box"); tb != nil {
							sub := &odfReader{listStyles: o.listStyles}
							sub.blocks(tb)
							for _, b := range sub.out {
								notes = append(notes, b.Text)
							}
						}
					}
				}
			}
		}
		o.out = append(o.out, title...)
		o.out = append(o.out, rest...)
		if len(notes) > 0 {
			o.out = append(o.out, &Block{Kind: Notes, Text: strings.Join(notes, "\n")})
		}
	}
}

// slideText reads a frame's text: an outline frame's paragraphs are bullets.
func (o *odfReader) slideText(tb *node, class string) {
	o.blocks(tb)
	if class == "outline" {
		for _, b := range o.out {
			if b.Kind == Paragraph {
				b.Kind = ListItem
			}
		}
	}
}
