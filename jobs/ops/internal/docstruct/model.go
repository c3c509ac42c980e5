package docstruct

import (
	"math"
	"strings"
	"unicode"
)

// Kind is what a block is.
type Kind uint8

// Block kinds. Section marks the start of a top-level section the format itself
// has (a slide): it resets the headings above what follows.
const (
	Paragraph Kind = iota
	Heading
	ListItem
	Table
	Image
	Code
	Footnote
	Notes
	Section
)

// String is the kind's name in chunks.json's elements.
func (k Kind) String() string {
	switch k {
	case Heading:
		return "heading"
	case ListItem:
		return "list"
	case Table:
		return "table"
	case Image:
		return "image"
	case Code:
		return "code"
	case Footnote:
		return "footnote"
	case Notes:
		return "notes"
	case Section:
		return "section"
	}
	return "paragraph"
}

// Box is a region of a page in PDF points, origin at the page's top-left corner.
type Box struct {
	Page int     `json:"page"`
	X0   float64 `json:"x0"`
	Y0   float64 `json:"y0"`
	X1   float64 `json:"x1"`
	Y1   float64 `json:"y1"`
}

// Union is the smallest box holding b and o (of one page).
func (b Box) Union(o Box) Box {
	return Box{Page: b.Page, X0: math.Min(b.X0, o.X0), Y0: math.Min(b.Y0, o.Y0), X1: math.Max(b.X1, o.X1), Y1: math.Max(b.Y1, o.Y1)}
}

// Block is one unit of a document, in reading order.
type Block struct {
	Kind Kind
	// Text is a paragraph's, heading's, list item's, code block's, footnote's or
	// notes' text; an image's alt text; a section's label ("Slide 3").
	Text string
	// Level is a heading's level (1–6) or a list item's depth (0 outermost).
	Level int
	// Ordered list items carry their number as written or counted ("3.", "b)").
	Ordered bool
	Marker  string
	// Label is a footnote's label, as referenced in the text ("[^1]").
	Label string
	// Rows are a table's cells, merged cells repeated over the grid positions they
	// span; Rows[0] is the header row.
	Rows [][]string
	// Boxes are where the block lies on the pages; RowBoxes the same for each of a
	// table's rows. Empty where no page is known.
	Boxes    []Box
	RowBoxes [][]Box
	// Pages are the pages the block lies on when they are known without boxes (from
	// the page breaks its application saved), ascending; RowPages the same for each
	// of a table's rows. Empty where boxes say it, or no page is known.
	Pages    []int
	RowPages [][]int
}

// Document is a document's blocks in reading order.
type Document struct {
	Blocks []*Block
	// Pages is the page count of the PDF the boxes refer to, or of the document as
	// its saved page breaks count it; 0 when there is none.
	Pages int
	// PageSource says where the blocks' pages come from: PageSourceLayout (boxes on
	// a PDF's pages), PageSourceHints (the page breaks the authoring application
	// saved in the file), or "" (no pages).
	PageSource string
}

// Page sources: see Document.PageSource.
const (
	PageSourceLayout = "layout"
	PageSourceHints  = "hints"
)

// PageSpan is pages first..last, ascending; nil when first is 0 (unknown).
func PageSpan(first, last int) []int {
	if first <= 0 {
		return nil
	}
	out := make([]int, 0, max(last, first)-first+1)
	for p := first; p <= max(last, first); p++ {
		out = append(out, p)
	}
	return out
}

// Pages lists the pages of boxes, ascending, without repeats.
func Pages(boxes []Box) []int {
	var out []int
	for _, b := range boxes {
		i := 0
		for i < len(out) && out[i] < b.Page {
			i++
		}
		if i == len(out) || out[i] != b.Page {
			out = append(out, 0)
			copy(out[i+1:], out[i:])
			out[i] = b.Page
		}
	}
	return out
}

// itemText splits a list item's content: its leading paragraphs are the item's
// text; nested lists and other blocks follow it.
func itemText(content []*Block) (string, []*Block) {
	var texts []string
	for len(content) > 0 && content[0].Kind == Paragraph {
		texts = append(texts, content[0].Text)
		content = content[1:]
	}
	return strings.Join(texts, " "), content
}

// cleanText collapses white space, drops control and private-use characters (the
// symbol-font bullets of presentations) and trims.
func cleanText(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || r == 0xA0:
			space = b.Len() > 0
			continue
		case r < ' ', r == 0xAD, r == 0xFFFD, r == 0x200B, r == 0xFEFF, unicode.Is(unicode.Co, r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// normalizeTable makes every row as wide as the widest, drops rows and columns with
// no text at the end (and empty columns anywhere), and cleans the cells.
func normalizeTable(rows [][]string) [][]string {
	w := 0
	for _, r := range rows {
		w = max(w, len(r))
	}
	var out [][]string
	for _, r := range rows {
		row := make([]string, w)
		empty := true
		for i, c := range r {
			row[i] = cleanText(c)
			empty = empty && row[i] == ""
		}
		if !empty {
			out = append(out, row)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return DropEmptyColumns(out)
}

// DropEmptyColumns drops the columns no row has text in; rows are of one width.
func DropEmptyColumns(rows [][]string) [][]string {
	if len(rows) == 0 {
		return rows
	}
	var keep []int
	for c := range rows[0] {
		for _, r := range rows {
			if r[c] != "" {
				keep = append(keep, c)
				break
			}
		}
	}
	if len(keep) == len(rows[0]) {
		return rows
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(keep))
		for j, c := range keep {
			out[i][j] = r[c]
		}
	}
	return out
}
