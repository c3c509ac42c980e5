package aiready

import (
	"context"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// document is the whole document's blocks in reading order.
type document struct {
	blocks []*block
	body   float64
}

// analyze drops running headers, footers and page numbers, reads each page's layout
// and gives headings their levels across the document.
func analyze(pages []*pageData) *document {
	body, _ := bodyStyle(pages)
	dropFurniture(pages, body)
	body, bodyBold := bodyStyle(pages)
	perPage := make([][]*block, len(pages))
	_ = parallel(context.Background(), len(pages), runtime.GOMAXPROCS(0), func(_ context.Context, i int) error {
		perPage[i] = pages[i].layout(body)
		return nil
	})
	d := &document{body: body}
	for _, bs := range perPage {
		for k, b := range bs {
			if n := len(d.blocks); n > 0 && k == 0 && carriesTable(d.blocks[n-1], b) {
				continue
			}
			if n := len(d.blocks); n > 0 && continues(d.blocks[n-1], b) {
				prev := d.blocks[n-1]
				prev.text = joinLines([]string{prev.text, b.text})
				prev.lines += b.lines
				prev.last, prev.leaf = b.last, b.leaf
				prev.boxes = append(prev.boxes, b.boxes...)
				continue
			}
			d.blocks = append(d.blocks, b)
		}
	}
	d.headings(bodyBold)
	d.listLevels()
	return d
}

// carriesTable adds b, first of a page, to the table that ended the page before when
// it carries that table on: a line whose pieces stand in the table's columns, or a
// table of as many columns (its header row dropped when it repeats the table's).
func carriesTable(t, b *block) bool {
	if t.kind != kindTable || len(t.rows) == 0 || b.first != t.last+1 {
		return false
	}
	switch {
	case b.kind == kindPara && b.lines == 1 && len(b.frags) >= 2 && len(t.gaps) > 0:
		row, ok := fitRow(b.frags, t.gaps)
		if !ok || len(row) != len(t.rows[0]) {
			return false
		}
		t.rows = append(t.rows, row)
		t.rowBoxes = append(t.rowBoxes, b.boxes)
	case b.kind == kindTable && len(b.rows) > 0 && len(b.rows[0]) == len(t.rows[0]):
		rows, boxes := b.rows, b.rowBoxes
		if slices.Equal(rows[0], t.rows[0]) {
			rows, boxes = rows[1:], boxes[1:]
		}
		t.rows = append(t.rows, rows...)
		t.rowBoxes = append(t.rowBoxes, boxes...)
	default:
		return false
	}
	t.last = b.last
	return true
}

// continues reports whether b, first of a column or a page, carries on the paragraph
// that ended the column or page before: same style, no sentence end, a lowercase start.
func continues(prev, b *block) bool {
	next := b.first == prev.last+1 || b.first == prev.last && b.leaf != prev.leaf
	if prev.kind != kindPara || b.kind != kindPara || !next || !sameSize(prev.size, b.size) || prev.bold != b.bold {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(prev.text)
	first, _ := utf8.DecodeRuneInString(b.text)
	return !strings.ContainsRune(".!?:;\"”)", last) && unicode.IsLower(first)
}

// bodyStyle is the size most characters are set at (to half a point) and whether
// most of those are bold.
func bodyStyle(pages []*pageData) (float64, bool) {
	count := map[float64]int{}
	bold := map[float64]int{}
	for _, p := range pages {
		for _, s := range p.segs {
			k := math.Round(s.size*2) / 2
			count[k] += s.chars
			if s.bold {
				bold[k] += s.chars
			}
		}
	}
	best, n := 10.0, 0
	for k, c := range count {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best, n > 0 && bold[best]*2 > n
}

var pageNumber = regexp.MustCompile(`^(?:(?:page|pg\.?|p\.|seite|página|pagina)\s*)?[-–—(\[]?\s*(?:\d{1,5}|[ivxlcdm]{1,8})\s*[-–—)\]]?(?:\s*(?:of|/|de|von|sur)\s*\d{1,5})?$`)

// furnitureBand is how much of the page, from the top and from the bottom, running
// headers and footers are looked for in; only the two outermost rows of text there
// are candidates, so body text reaching into the band is never taken for furniture.
const furnitureBand = 0.12

// edgeRows marks the segments of the two outermost rows of text at the top and at
// the bottom of a page that lie within the band: 1 at the top, 2 at the bottom.
func edgeRows(p *pageData, body float64) map[*segment]int {
	out := map[*segment]int{}
	var small []*segment
	for _, s := range p.segs {
		// Text larger than the body is a title, not furniture.
		if s.size <= 1.15*body {
			small = append(small, s)
		}
	}
	if len(p.segs) == 0 {
		return out
	}
	mark := func(fromTop bool) {
		rows := 0
		var row rect
		segs := slices.Clone(p.segs)
		slices.SortFunc(segs, func(a, b *segment) int {
			if fromTop {
				return cmpF(a.box.Y0, b.box.Y0)
			}
			return cmpF(b.box.Y1, a.box.Y1)
		})
		for _, s := range segs {
			if rows == 0 || !vOverlapHalf(row, s.box) {
				rows++
				row = s.box
			}
			inBand := fromTop && s.box.Y1 <= furnitureBand*p.h || !fromTop && s.box.Y0 >= (1-furnitureBand)*p.h
			if rows > 2 || !inBand {
				return
			}
			if slices.Contains(small, s) {
				if fromTop {
					out[s] = 1
				} else {
					out[s] = 2
				}
			}
		}
	}
	mark(true)
	mark(false)
	return out
}

// dropFurniture removes running headers and footers (text repeated at the same
// height in the outermost rows of several pages, digits aside) and page numbers.
func dropFurniture(pages []*pageData, body float64) {
	minRepeat := 3
	if len(pages) <= 5 {
		minRepeat = 2
	}
	type key struct {
		edge int
		y    int
		text string
	}
	keyOf := func(edge int, s *segment) key {
		return key{edge, int(math.Round((s.box.Y0 + s.box.Y1) / 8)), normalise(s.text)}
	}
	count := map[key]int{}
	edges := make([]map[*segment]int, len(pages))
	for i, p := range pages {
		edges[i] = edgeRows(p, body)
		seen := map[key]bool{}
		for s, e := range edges[i] {
			// Heights are compared in 4-point steps; a neighbouring step counts too.
			k := keyOf(e, s)
			for _, d := range []int{-1, 0, 1} {
				kd := k
				kd.y += d
				if !seen[kd] {
					seen[kd] = true
					count[kd]++
				}
			}
		}
	}
	for i, p := range pages {
		kept := p.segs[:0]
		for _, s := range p.segs {
			if e := edges[i][s]; e != 0 && !inTableRow(p, s) {
				norm := strings.ToLower(strings.TrimSpace(s.text))
				if pageNumber.MatchString(norm) || count[keyOf(e, s)] >= minRepeat {
					continue
				}
			}
			kept = append(kept, s)
		}
		p.segs = kept
	}
}

// inTableRow reports a segment in a row of three or more segments, or between
// vertical rules: a table's row, which may hold numbers, is no page furniture.
func inTableRow(p *pageData, s *segment) bool {
	n := 0
	for _, o := range p.segs {
		if vOverlapHalf(o.box, s.box) {
			n++
		}
	}
	if n >= 3 {
		return true
	}
	left, right := false, false
	for _, r := range verticalRules(p.rules) {
		if r.Y0 <= s.box.Y0 && r.Y1 >= s.box.Y1 {
			left = left || r.X1 <= s.box.X0+1
			right = right || r.X0 >= s.box.X1-1
		}
	}
	return left && right
}

// normalise is text as compared across pages: lower case, digits alike.
func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return '#'
		}
		return unicode.ToLower(r)
	}, s)
}

// headings turns short paragraphs set larger than the body (or bold, when the body
// is not) into headings; their styles, largest first, give the levels.
func (d *document) headings(bodyBold bool) {
	type style struct {
		size float64
		bold bool
	}
	candidate := func(b *block) (style, bool) {
		if b.kind != kindPara || b.lines > 3 || utf8.RuneCountInString(b.text) > 200 || !hasLetter(b.text) {
			return style{}, false
		}
		st := style{math.Round(b.size*2) / 2, b.bold}
		if b.size >= 1.12*d.body {
			return st, true
		}
		if b.bold && !bodyBold && b.size >= 0.95*d.body && b.lines <= 2 && !strings.HasSuffix(b.text, ".") {
			return st, true
		}
		return style{}, false
	}
	var styles []style
	for _, b := range d.blocks {
		if st, ok := candidate(b); ok && !slices.Contains(styles, st) {
			styles = append(styles, st)
		}
	}
	slices.SortFunc(styles, func(a, b style) int {
		if a.size != b.size {
			return cmpF(b.size, a.size)
		}
		if a.bold != b.bold {
			if a.bold {
				return -1
			}
			return 1
		}
		return 0
	})
	// Sizes within 0.6 pt of each other (and of one weight) are one level.
	level := map[style]int{}
	lv := 0
	for i, st := range styles {
		if i == 0 || styles[i-1].bold != st.bold || styles[i-1].size-st.size > 0.6 {
			lv++
		}
		level[st] = min(lv, 6)
	}
	for _, b := range d.blocks {
		if st, ok := candidate(b); ok {
			b.kind = kindHeading
			b.level = level[st]
		}
	}
}

// listLevels sets each list item's depth from its marker's indent among the items of
// its list (a run of consecutive items).
func (d *document) listLevels() {
	for i := 0; i < len(d.blocks); {
		if d.blocks[i].kind != kindItem {
			i++
			continue
		}
		j := i
		var xs []float64
		for ; j < len(d.blocks) && d.blocks[j].kind == kindItem; j++ {
			xs = append(xs, d.blocks[j].x0)
		}
		xs = clusterIndents(xs)
		for _, b := range d.blocks[i:j] {
			for k, x := range xs {
				if b.x0 >= x-3 {
					b.level = k
				}
			}
		}
		i = j
	}
}

func clusterIndents(v []float64) []float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	var out []float64
	for _, x := range v {
		if len(out) > 0 && x-out[len(out)-1] <= 6 {
			continue
		}
		out = append(out, x)
	}
	if len(out) > 6 {
		out = out[:6]
	}
	return out
}
