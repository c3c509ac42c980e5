package docstruct

import (
	"math"
	"strings"
	"unicode"
)

// Word is one word of a PDF's text layer, with where it is drawn.
type Word struct {
	Text string
	Box  Box
}

// Locate finds where each block lies in the words of a PDF made from the document
// (in the PDF's content order, page after page) and sets its Boxes (and a table's
// RowBoxes): a block's words are matched in order, ahead of the last block's, or
// anywhere when they are not found ahead (sheets printed across, then down). Blocks
// whose words are not found keep no boxes.
func Locate(d *Document, words []Word, pages int) {
	d.Pages, d.PageSource = pages, PageSourceLayout
	// The PDF's layout is what the boxes show: pages from saved breaks give way to it.
	for _, b := range d.Blocks {
		b.Pages, b.RowPages = nil, nil
	}
	l := &locator{index: map[string][]int{}}
	for _, w := range words {
		for _, t := range tokens(w.Text) {
			l.index[t] = append(l.index[t], len(l.toks))
			l.toks = append(l.toks, t)
			l.boxes = append(l.boxes, w.Box)
		}
	}
	if len(l.toks) == 0 {
		return
	}
	for _, b := range d.Blocks {
		switch b.Kind {
		case Table:
			b.RowBoxes = make([][]Box, len(b.Rows))
			b.Boxes = nil
			for i, r := range b.Rows {
				b.RowBoxes[i] = l.find(tokens(strings.Join(uniqueCells(r), " ")))
				b.Boxes = append(b.Boxes, b.RowBoxes[i]...)
			}
			b.Boxes = MergeBoxes(b.Boxes)
		case Section:
		default:
			b.Boxes = l.find(tokens(b.Text))
		}
	}
}

// uniqueCells drops a merged cell's repeats: the PDF draws its text once.
func uniqueCells(r []string) []string {
	var out []string
	for i, c := range r {
		if i == 0 || c != r[i-1] {
			out = append(out, c)
		}
	}
	return out
}

type locator struct {
	toks  []string
	boxes []Box
	index map[string][]int
	next  int
}

// lookahead is how many PDF words may stand between two of a block's words (list
// numbers, footnote marks, words split by hyphenation).
const lookahead = 6

// shortWindow is how far ahead, in words, a short block is looked for.
const shortWindow = 200

// maxTries bounds the starting places tried for one block.
const maxTries = 12

func (l *locator) find(ts []string) []Box {
	if len(ts) == 0 {
		return nil
	}
	need := max(1, (len(ts)*6+9)/10)
	best, bestAt := 0, []int(nil)
	try := func(start int) {
		at := l.match(ts, start)
		if len(at) > best {
			best, bestAt = len(at), at
		}
	}
	// A block of a few words (a sheet's name, a short heading) is common text: it is
	// looked for only near where the last block ended, and never before.
	short := len(ts) < 4
	// Ahead first: the first few places where the block's first (or second) word is.
	for k := 0; k < min(2, len(ts)) && best < need; k++ {
		tries := 0
		for _, p := range l.index[ts[k]] {
			if p < l.next {
				continue
			}
			if short && p > l.next+shortWindow {
				break
			}
			if tries++; tries > maxTries || best >= need {
				break
			}
			try(p)
		}
	}
	if best < need && !short {
		tries := 0
		for _, p := range l.index[ts[0]] {
			if p >= l.next {
				break
			}
			if tries++; tries > maxTries {
				break
			}
			try(p)
		}
	}
	if best < need {
		return nil
	}
	l.next = bestAt[len(bestAt)-1] + 1
	var boxes []Box
	for _, p := range bestAt {
		boxes = append(boxes, l.boxes[p])
	}
	return MergeBoxes(boxes)
}

// match matches ts in order from PDF word start on, each within lookahead of the
// last match; it returns the positions matched.
func (l *locator) match(ts []string, start int) []int {
	var at []int
	j := start
	miss := 0
	for _, t := range ts {
		found := -1
		for k := j; k < min(len(l.toks), j+lookahead+1); k++ {
			if l.toks[k] == t {
				found = k
				break
			}
		}
		if found < 0 {
			if miss++; miss > 8 && len(at) < miss {
				return at
			}
			continue
		}
		at = append(at, found)
		j = found + 1
	}
	return at
}

// MergeBoxes joins word boxes into one box per run of text on a page: a word above
// the box so far (a new column) or on another page starts another.
func MergeBoxes(in []Box) []Box {
	var out []Box
	for _, b := range in {
		if n := len(out); n > 0 {
			cur := &out[n-1]
			h := math.Max(b.Y1-b.Y0, 1)
			if cur.Page == b.Page && b.Y0 >= cur.Y0-h && !(b.X1 < cur.X0-2*h && b.Y0 < cur.Y1) {
				*cur = cur.Union(b)
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// tokens are text's words as matched: letters and digits only, lower case.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
