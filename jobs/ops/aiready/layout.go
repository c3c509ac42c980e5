package aiready

import (
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/filemill/filemill/jobs/ops/internal/docstruct"
)

type blockKind int

const (
	kindPara blockKind = iota
	kindHeading
	kindItem
	kindTable
)

// block is one unit of the document in reading order.
type block struct {
	kind blockKind
	text string // paragraph, heading and list item text
	rows [][]string
	// size and bold are the block's dominant style; lines how many lines it has.
	size  float64
	bold  bool
	lines int
	// level is a heading's level (1–6) or a list item's depth (0 outermost).
	level   int
	marker  string // a list item's marker: "-" or its own ("3.", "a)")
	ordered bool
	x0      float64
	// first and last are the pages the block comes from; leaf numbers the column
	// (within its page) that it was read from.
	first, last int
	leaf        int
	// boxes are the block's lines on their pages; rowBoxes a table's rows.
	boxes    []docstruct.Box
	rowBoxes [][]docstruct.Box
	// frags are a one-line paragraph's pieces; gaps a table's column gaps: a header
	// row set apart from its table is joined to it by them.
	frags []frag
	gaps  []span
}

func pageBox(page int, r rect) docstruct.Box {
	return docstruct.Box{Page: page, X0: r.X0, Y0: r.Y0, X1: r.X1, Y1: r.Y1}
}

// item is what reading order is decided on: a segment, or a table found by its rules.
type item struct {
	box rect
	seg *segment
	tab *block
}

// layouter reads one page.
type layouter struct {
	page   int
	body   float64 // the document's body text size
	minGap float64 // the narrowest gutter between columns
	out    []*block
	leaves int
}

// layout turns a page's segments and rules into blocks in reading order.
func (p *pageData) layout(body float64) []*block {
	l := &layouter{page: p.page, body: body, minGap: math.Max(4, 0.5*body)}
	items := make([]*item, 0, len(p.segs))
	rest := p.segs
	tables, rest := l.ruledTables(rest, p.rules)
	for _, t := range tables {
		items = append(items, t)
	}
	for _, s := range rest {
		items = append(items, &item{box: s.box, seg: s})
	}
	l.cut(items)
	l.joinHeaders()
	return l.out
}

// fitRow puts a line's pieces in the columns a table's gaps part: ok when they fill
// two columns or more and none spans a gap whole. A piece may reach into a gap (a
// header centred over numbers set flush right): it belongs to the column it covers
// most of.
func fitRow(frags []frag, gaps []span) ([]string, bool) {
	row := make([]string, len(gaps)+1)
	filled := 0
	for _, f := range frags {
		c, best := 0, math.Inf(-1)
		for k := 0; k <= len(gaps); k++ {
			x0, x1 := math.Inf(-1), math.Inf(1)
			if k > 0 {
				x0 = gaps[k-1].x1
			}
			if k < len(gaps) {
				x1 = gaps[k].x0
			}
			if ov := math.Min(x1, f.box.X1) - math.Max(x0, f.box.X0); ov > best {
				c, best = k, ov
			}
		}
		for _, g := range gaps {
			if f.box.X0 < g.x0-0.5 && f.box.X1 > g.x1+0.5 {
				return nil, false
			}
		}
		if row[c] == "" {
			filled++
		}
		row[c] = strings.TrimSpace(row[c] + " " + strings.TrimSpace(f.text))
	}
	return row, filled >= 2
}

// joinHeaders makes a one-line paragraph right above a table its header row when
// its pieces stand in the table's columns: a header whose cells stand closer than
// the rows' made a group of its own.
func (l *layouter) joinHeaders() {
	for i := 1; i < len(l.out); i++ {
		t, p := l.out[i], l.out[i-1]
		if t.kind != kindTable || len(t.gaps) == 0 || p.kind != kindPara || p.lines != 1 || len(p.frags) < 2 ||
			len(t.rowBoxes) == 0 || len(p.boxes) != 1 {
			continue
		}
		pb, tb := p.boxes[0], t.rowBoxes[0][0]
		h := pb.Y1 - pb.Y0
		if tb.Y0-pb.Y1 > 1.5*h || tb.Y0 < pb.Y1-0.5*h {
			continue
		}
		row, ok := fitRow(p.frags, t.gaps)
		if !ok || len(row) != len(t.rows[0]) {
			continue
		}
		t.rows = append([][]string{row}, t.rows...)
		t.rowBoxes = append([][]docstruct.Box{{pb}}, t.rowBoxes...)
		l.out = slices.Delete(l.out, i-1, i)
		i--
	}
}

// band is a horizontal strip of items no horizontal cut can pass through.
type band struct {
	items []*item
	cover []span // x-intervals covered, merged, ascending
}

type span struct{ x0, x1 float64 }

// group is a run of bands sharing their gutters: vertical strips empty of text from
// top to bottom, with text on both sides.
type group struct {
	items []*item
	bands int
	cover []span
	// tops and bottoms are the bands' vertical extents, top to bottom.
	tops, bottoms []float64
}

func newGroup(b *band) *group {
	g := &group{items: slices.Clone(b.items), bands: 1, cover: b.cover}
	g.addExtent(b)
	return g
}

func (g *group) addExtent(b *band) {
	top, bottom := math.Inf(1), math.Inf(-1)
	for _, it := range b.items {
		top, bottom = math.Min(top, it.box.Y0), math.Max(bottom, it.box.Y1)
	}
	g.tops, g.bottoms = append(g.tops, top), append(g.bottoms, bottom)
}

// killsGutter reports whether one of before's gutters is not (mostly) one of after's.
func killsGutter(before, after []span) bool {
	for _, g := range before {
		kept := false
		for _, a := range after {
			if math.Min(g.x1, a.x1)-math.Max(g.x0, a.x0) >= 0.5*(g.x1-g.x0) {
				kept = true
				break
			}
		}
		if !kept {
			return true
		}
	}
	return false
}

// apart reports a band set apart from the group's rows: further below the last than
// the rows stand from each other, or of another size (a heading under a table).
func (l *layouter) apart(g *group, b *band) bool {
	var gaps []float64
	for i := 1; i < len(g.tops); i++ {
		gaps = append(gaps, g.tops[i]-g.bottoms[i-1])
	}
	top := math.Inf(1)
	size := 0.0
	for _, it := range b.items {
		top = math.Min(top, it.box.Y0)
		if it.seg != nil {
			size = math.Max(size, it.seg.size)
		}
	}
	gsize := 0.0
	for _, it := range g.items {
		if it.seg != nil {
			gsize = math.Max(gsize, it.seg.size)
		}
	}
	otherSize := size > 0 && gsize > 0 && !sameSize(size, gsize)
	if g.bands < 2 {
		return otherSize
	}
	gap := top - g.bottoms[len(g.bottoms)-1]
	return gap > 1.4*median(gaps)+1 || otherSize
}

func (g *group) gutters(minGap float64) []span {
	var out []span
	for i := 1; i < len(g.cover); i++ {
		if g.cover[i].x0-g.cover[i-1].x1 >= minGap {
			out = append(out, span{g.cover[i-1].x1, g.cover[i].x0})
		}
	}
	return out
}

// cover merges the x-intervals of items into a.
func cover(a []span, items []*item) []span {
	out := slices.Clone(a)
	for _, it := range items {
		out = append(out, span{it.box.X0, it.box.X1})
	}
	slices.SortFunc(out, func(a, b span) int { return cmpF(a.x0, b.x0) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && s.x0 <= merged[n-1].x1 {
			merged[n-1].x1 = math.Max(merged[n-1].x1, s.x1)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// core is the middle of a box vertically: loose glyph boxes of neighbouring lines
// touch, their cores do not.
func core(b rect) (float64, float64) {
	h := b.Y1 - b.Y0
	return b.Y0 + 0.25*h, b.Y1 - 0.25*h
}

func (l *layouter) bands(items []*item) []*band {
	slices.SortFunc(items, func(a, b *item) int {
		ya, _ := core(a.box)
		yb, _ := core(b.box)
		return cmpF(ya, yb)
	})
	var out []*band
	var bottom float64
	for _, it := range items {
		y0, y1 := core(it.box)
		if len(out) == 0 || y0 > bottom {
			out = append(out, &band{})
			bottom = y1
		}
		b := out[len(out)-1]
		b.items = append(b.items, it)
		bottom = math.Max(bottom, y1)
	}
	for _, b := range out {
		b.cover = cover(nil, b.items)
	}
	return out
}

// cut orders items recursively: bands top to bottom, grouped while they share a
// gutter; a group with gutters is a table or columns read left to right.
func (l *layouter) cut(items []*item) {
	if len(items) == 0 {
		return
	}
	bands := l.bands(items)
	var groups []*group
	var cur *group
	for _, b := range bands {
		if cur == nil {
			cur = newGroup(b)
			continue
		}
		merged := cover(cur.cover, b.items)
		cand := &group{cover: merged}
		curGut := cur.gutters(l.minGap)
		curG := len(curGut) > 0
		bG := len((&group{cover: b.cover}).gutters(l.minGap)) > 0
		// A band that closes one of the group's gutters and stands apart from its rows
		// (a heading under a table or columns) starts a group of its own.
		closes := curG && killsGutter(curGut, cand.gutters(l.minGap)) && l.apart(cur, b)
		if !closes && ((len(cand.gutters(l.minGap)) > 0 && !(curG && l.belowColumns(cur, b))) || (!curG && !bG)) {
			cur.items = append(cur.items, b.items...)
			cur.bands++
			cur.cover = merged
			cur.addExtent(b)
			continue
		}
		groups = append(groups, cur)
		cur = newGroup(b)
	}
	groups = append(groups, cur)
	for _, g := range groups {
		gut := g.gutters(l.minGap)
		switch {
		case len(gut) == 0 || g.bands == 1:
			l.leaf(g.items)
		case l.isTable(g, gut):
			l.table(g, gut)
		default:
			for _, col := range splitColumns(g.items, gut) {
				l.cut(col)
			}
		}
	}
}

// belowColumns reports a band under a group's columns rather than in one of them: it
// sits in one column, every other column has ended above it, and it stands further
// below its own column's text than a line or paragraph would (a heading or a line
// after a multi-column section).
func (l *layouter) belowColumns(g *group, b *band) bool {
	gut := g.gutters(l.minGap)
	col := func(it *item) int {
		return sort.Search(len(gut), func(i int) bool { return gut[i].x0 >= it.box.X1-0.01 })
	}
	top, bottom := math.Inf(1), math.Inf(-1)
	c := col(b.items[0])
	for _, it := range b.items {
		if col(it) != c {
			return false
		}
		top, bottom = math.Min(top, it.box.Y0), math.Max(bottom, it.box.Y1)
	}
	own := math.Inf(-1)
	for _, it := range g.items {
		if col(it) == c {
			own = math.Max(own, it.box.Y1)
		} else if it.box.Y1 > top {
			return false
		}
	}
	return top-own > 0.9*(bottom-top)
}

func splitColumns(items []*item, gut []span) [][]*item {
	cols := make([][]*item, len(gut)+1)
	for _, it := range items {
		c := sort.Search(len(gut), func(i int) bool { return gut[i].x0 >= it.box.X1-0.01 })
		cols[c] = append(cols[c], it)
	}
	return cols
}

// isTable tells a table from columns of prose: prose columns are wide, their lines
// long and filling the column; table cells are short.
func (l *layouter) isTable(g *group, gut []span) bool {
	cols := splitColumns(g.items, gut)
	for _, it := range g.items {
		if it.tab != nil {
			return false
		}
	}
	prose := true
	for _, col := range cols {
		x0, x1 := math.Inf(1), math.Inf(-1)
		var widths, lens []float64
		for _, it := range col {
			x0, x1 = math.Min(x0, it.box.X0), math.Max(x1, it.box.X1)
			widths = append(widths, it.box.X1-it.box.X0)
			lens = append(lens, float64(it.seg.chars))
		}
		w := x1 - x0
		if w < 8*l.body || median(lens) < 20 || median(widths) < 0.5*w {
			prose = false
		}
	}
	if prose {
		return false
	}
	// A table has at least two rows with two cells.
	rows := 0
	for _, b := range l.bands(slices.Clone(g.items)) {
		filled := 0
		for _, c := range splitColumns(b.items, gut) {
			if len(c) > 0 {
				filled++
			}
		}
		if filled >= 2 {
			rows++
		}
	}
	return rows >= 2
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// table makes a table of a group: its gutters divide the columns, its bands the rows;
// a band with nothing in the first column continues the row above (a wrapped cell).
func (l *layouter) table(g *group, gut []span) {
	// The gutters part the columns; pieces closer than a gutter but standing apart on
	// every row (cells set a few points apart) part more.
	var rows []line
	for _, b := range l.bands(g.items) {
		ln := line{box: b.items[0].box}
		for _, it := range b.items {
			ln.box = union(ln.box, it.box)
			ln.frags = append(ln.frags, it.seg.frags...)
		}
		slices.SortFunc(ln.frags, func(a, b frag) int { return cmpF(a.box.X0, b.box.X0) })
		rows = append(rows, ln)
	}
	if gaps := fragGaps(rows); len(gaps) > len(gut) {
		gut = gaps
	}
	l.lineTable(rows, gut)
}

// cellText joins a cell's segments in reading order.
func cellText(items []*item) string {
	slices.SortFunc(items, func(a, b *item) int {
		if vOverlapHalf(a.box, b.box) {
			return cmpF(a.box.X0, b.box.X0)
		}
		return cmpF(a.box.Y0, b.box.Y0)
	})
	var parts []string
	for _, it := range items {
		if it.seg != nil {
			parts = append(parts, it.seg.text)
		}
	}
	return joinLines(parts)
}

// ruledTables finds tables drawn with rules: a connected grid of horizontal and
// vertical rules with at least two columns. The segments inside become its cells.
func (l *layouter) ruledTables(segs []*segment, rules []rect) ([]*item, []*segment) {
	if len(rules) < 5 || len(rules) > 2000 {
		return nil, segs
	}
	// Connected components of rules that touch (within 2 points).
	parent := make([]int, len(rules))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	const touch = 2.0
	order := make([]int, len(rules))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpF(rules[a].X0, rules[b].X0) })
	for ai, a := range order {
		ra := rules[a]
		for _, b := range order[ai+1:] {
			rb := rules[b]
			if rb.X0 > ra.X1+touch {
				break
			}
			if rb.Y0 <= ra.Y1+touch && ra.Y0 <= rb.Y1+touch {
				parent[find(a)] = find(b)
			}
		}
	}
	comps := map[int][]rect{}
	for i, r := range rules {
		comps[find(i)] = append(comps[find(i)], r)
	}
	var tables []*item
	used := make([]bool, len(segs))
	keys := make([]int, 0, len(comps))
	for k := range comps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		comp := comps[k]
		var xs, ys []float64
		var vr []rect
		box := comp[0]
		for _, r := range comp {
			box = union(box, r)
			if r.X1-r.X0 <= 3 && r.Y1-r.Y0 > 3 {
				xs = append(xs, (r.X0+r.X1)/2)
				vr = append(vr, r)
			} else if r.Y1-r.Y0 <= 3 {
				ys = append(ys, (r.Y0+r.Y1)/2)
			}
		}
		xs, ys = clusterCoords(xs), clusterCoords(ys)
		if len(xs) < 3 || len(ys) < 2 {
			continue
		}
		nr, nc := len(ys)-1, len(xs)-1
		cells := make([][][]*item, nr)
		for i := range cells {
			cells[i] = make([][]*item, nc)
		}
		any := false
		for i, s := range segs {
			if used[i] {
				continue
			}
			cx, cy := (s.box.X0+s.box.X1)/2, (s.box.Y0+s.box.Y1)/2
			if cx < xs[0] || cx > xs[nc] || cy < ys[0] || cy > ys[nr] {
				continue
			}
			c := min(nc-1, max(0, sort.SearchFloat64s(xs, s.box.X0+0.5)-1))
			r := min(nr-1, max(0, sort.SearchFloat64s(ys, cy)-1))
			cells[r][c] = append(cells[r][c], &item{box: s.box, seg: s})
			used[i] = true
			any = true
		}
		if !any {
			continue
		}
		t := &block{kind: kindTable, first: l.page, last: l.page}
		for r, row := range cells {
			texts := make([]string, nc)
			empty := true
			for c, its := range row {
				texts[c] = cellText(its)
				empty = empty && texts[c] == ""
			}
			if !empty {
				spanCells(texts, xs, vr, (ys[r]+ys[r+1])/2)
				t.rows = append(t.rows, texts)
				t.rowBoxes = append(t.rowBoxes, []docstruct.Box{pageBox(l.page, rect{X0: xs[0], Y0: ys[r], X1: xs[nc], Y1: ys[r+1]})})
			}
		}
		t.rows = docstruct.DropEmptyColumns(t.rows)
		if len(t.rows) == 0 || len(t.rows[0]) < 2 {
			// A frame around text, not a table: its text goes back to the page.
			for _, row := range cells {
				for _, its := range row {
					for _, it := range its {
						for i, s := range segs {
							if s == it.seg {
								used[i] = false
							}
						}
					}
				}
			}
			continue
		}
		tables = append(tables, &item{box: box, tab: t})
	}
	if len(tables) == 0 {
		return nil, segs
	}
	rest := make([]*segment, 0, len(segs))
	for i, s := range segs {
		if !used[i] {
			rest = append(rest, s)
		}
	}
	return tables, rest
}

// spanCells joins the cells of a row that no vertical rule parts at the row's middle
// y (a merged cell), repeating the joined text over the columns it spans.
func spanCells(texts []string, xs []float64, vr []rect, y float64) {
	parted := func(x float64) bool {
		for _, r := range vr {
			if math.Abs((r.X0+r.X1)/2-x) <= 2 && r.Y0 <= y && r.Y1 >= y {
				return true
			}
		}
		return false
	}
	for a := 0; a < len(texts); {
		b := a + 1
		for b < len(texts) && !parted(xs[b]) {
			b++
		}
		if b-a > 1 {
			var parts []string
			for _, t := range texts[a:b] {
				if t != "" {
					parts = append(parts, t)
				}
			}
			joined := strings.Join(parts, " ")
			for i := a; i < b; i++ {
				texts[i] = joined
			}
		}
		a = b
	}
}

func clusterCoords(v []float64) []float64 {
	slices.Sort(v)
	var out []float64
	for _, x := range v {
		if len(out) > 0 && x-out[len(out)-1] <= 2 {
			continue
		}
		out = append(out, x)
	}
	return out
}

// line is one line of text in a single column.
type line struct {
	text  string
	box   rect
	size  float64
	bold  bool
	chars int
	frags []frag
}

// leaf reads a single column: its items in lines top to bottom, the lines in blocks.
func (l *layouter) leaf(items []*item) {
	l.leaves++
	slices.SortFunc(items, func(a, b *item) int { return cmpF((a.box.Y0+a.box.Y1)/2, (b.box.Y0+b.box.Y1)/2) })
	var lines []line
	var pending []*item
	flushLine := func() {
		if len(pending) == 0 {
			return
		}
		slices.SortFunc(pending, func(a, b *item) int { return cmpF(a.box.X0, b.box.X0) })
		ln := line{box: pending[0].box}
		var parts []string
		var boldN, best int
		for _, it := range pending {
			s := it.seg
			parts = append(parts, s.text)
			ln.frags = append(ln.frags, s.frags...)
			ln.box = union(ln.box, s.box)
			ln.chars += s.chars
			if s.chars > best {
				ln.size, best = s.size, s.chars
			}
			if s.bold {
				boldN += s.chars
			}
		}
		ln.bold = boldN*2 >= ln.chars
		ln.text = strings.Join(parts, " ")
		lines = append(lines, ln)
		pending = pending[:0]
	}
	var lineBox rect
	for _, it := range items {
		if it.tab != nil {
			flushLine()
			l.tabulate(lines)
			lines = lines[:0]
			l.out = append(l.out, it.tab)
			continue
		}
		if len(pending) > 0 && !vOverlapHalf(lineBox, it.box) {
			flushLine()
		}
		if len(pending) == 0 {
			lineBox = it.box
		} else {
			lineBox = union(lineBox, it.box)
		}
		pending = append(pending, it)
	}
	flushLine()
	l.tabulate(lines)
}

// tabulate turns a column's lines into blocks: runs of lines whose pieces stand in
// columns (a strip of the column empty on every line, pieces on both sides) are
// tables however narrow the strip, as pdfplumber's text strategy and Camelot's
// stream mode find them; the other lines are paragraphs and list items.
func (l *layouter) tabulate(lines []line) {
	start := 0
	for i := 0; i < len(lines); {
		if j, gaps := l.tableRun(lines, i); j > i {
			l.blocks(lines[start:i])
			l.lineTable(lines[i:j], gaps)
			i, start = j, j
			continue
		}
		i++
	}
	l.blocks(lines[start:])
}

// minTableRows is how many lines in columns make a table.
const minTableRows = 3

// tableRun returns the end of the run of lines from i that reads as a table, with
// its column gaps; i when there is none.
func (l *layouter) tableRun(lines []line, i int) (int, []span) {
	j := i
	for j < len(lines) {
		ln := lines[j]
		if len(ln.frags) < 2 {
			break
		}
		if _, _, _, ok := listMarker(ln.text); ok {
			break
		}
		if j > i {
			h := math.Max(ln.box.Y1-ln.box.Y0, 1)
			if ln.box.Y0-lines[j-1].box.Y1 > 1.2*h || !sameSize(ln.size, lines[j-1].size) && j-i > 1 {
				break
			}
		}
		j++
	}
	for k := j; k-i >= minTableRows; k-- {
		if gaps := fragGaps(lines[i:k]); len(gaps) > 0 {
			return k, gaps
		}
	}
	return i, nil
}

// fragGaps are the strips empty on every line, between pieces, that at least two
// thirds of the lines have pieces on both sides of.
func fragGaps(lines []line) []span {
	var items []*item
	for _, ln := range lines {
		for _, f := range ln.frags {
			items = append(items, &item{box: f.box})
		}
	}
	cov := cover(nil, items)
	// Lines of one piece (a wrapped cell's further lines) say nothing of columns.
	multi := 0
	for _, ln := range lines {
		if len(ln.frags) >= 2 {
			multi++
		}
	}
	var out []span
	for k := 1; k < len(cov); k++ {
		g := span{cov[k-1].x1, cov[k].x0}
		both := 0
		for _, ln := range lines {
			left, right := false, false
			for _, f := range ln.frags {
				left = left || f.box.X1 <= g.x0+0.01
				right = right || f.box.X0 >= g.x1-0.01
			}
			if left && right {
				both++
			}
		}
		if both >= 2 && both*3 >= 2*multi {
			out = append(out, g)
		}
	}
	return out
}

// lineTable makes a table of lines, its gaps dividing the columns; a line with
// nothing in the first column continues the row above (a wrapped cell).
func (l *layouter) lineTable(lines []line, gaps []span) {
	t := &block{kind: kindTable, first: l.page, last: l.page, leaf: l.leaves, gaps: gaps}
	// Rows stand further apart than the lines of a wrapped cell (cell padding): when
	// the space between lines takes two sizes, the larger parts rows, and a row's
	// lines (a cell centred beside a wrapped one too) are one row. Else a line with
	// nothing in the first column carries on the row above.
	var pitch []float64
	for i := 1; i < len(lines); i++ {
		pitch = append(pitch, lines[i].box.Y0-lines[i-1].box.Y1)
	}
	split := math.Inf(1)
	if len(pitch) > 0 {
		lo, hi := slices.Min(pitch), slices.Max(pitch)
		if hi-lo >= 1.5 {
			split = (lo + hi) / 2
		}
	}
	for i, ln := range lines {
		row := make([]string, len(gaps)+1)
		for _, f := range ln.frags {
			c := sort.Search(len(gaps), func(i int) bool { return gaps[i].x0 >= f.box.X1-0.01 })
			row[c] = strings.TrimSpace(strings.TrimSpace(row[c]) + " " + strings.TrimSpace(f.text))
		}
		carries := row[0] == ""
		if !math.IsInf(split, 1) && i > 0 {
			carries = pitch[i-1] < split
		}
		if carries && len(t.rows) > 0 {
			prev := t.rows[len(t.rows)-1]
			for i, c := range row {
				if c != "" {
					prev[i] = strings.TrimSpace(prev[i] + " " + c)
				}
			}
			n := len(t.rowBoxes) - 1
			t.rowBoxes[n][0] = t.rowBoxes[n][0].Union(pageBox(l.page, ln.box))
			continue
		}
		t.rows = append(t.rows, row)
		t.rowBoxes = append(t.rowBoxes, []docstruct.Box{pageBox(l.page, ln.box)})
	}
	l.out = append(l.out, t)
}

// blocks groups a column's lines into paragraphs and list items: a new block starts
// at a list marker, a change of style, a wider gap or an indented first line.
func (l *layouter) blocks(lines []line) {
	if len(lines) == 0 {
		return
	}
	left, right := math.Inf(1), math.Inf(-1)
	for _, ln := range lines {
		left, right = math.Min(left, ln.box.X0), math.Max(right, ln.box.X1)
	}
	var cur *block
	var parts []string
	var prev line
	flush := func() {
		if cur != nil {
			cur.text = joinLines(parts)
			l.out = append(l.out, cur)
		}
		cur, parts = nil, nil
	}
	for _, ln := range lines {
		size := math.Max(ln.size, 1)
		gap := ln.box.Y0 - prev.box.Y1
		if marker, rest, ordered, ok := listMarker(ln.text); ok && ln.size < 1.12*l.body {
			flush()
			cur = &block{kind: kindItem, marker: marker, ordered: ordered, size: ln.size, bold: ln.bold, lines: 1,
				x0: ln.box.X0, first: l.page, last: l.page, leaf: l.leaves, boxes: []docstruct.Box{pageBox(l.page, ln.box)}}
			parts = append(parts, rest)
			prev = ln
			continue
		}
		if cur != nil {
			cont := false
			switch cur.kind {
			case kindItem:
				cont = gap <= 0.6*size && ln.box.X0 >= cur.x0+0.3*size && sameSize(ln.size, cur.size)
			case kindPara:
				indented := ln.box.X0-left > 0.8*size && prev.box.X0-left < 0.3*size
				cont = gap <= 0.6*size && sameSize(ln.size, cur.size) && ln.bold == cur.bold && !indented &&
					!endsParagraph(prev, ln, right)
			}
			if cont {
				parts = append(parts, ln.text)
				cur.boxes = append(cur.boxes, pageBox(l.page, ln.box))
				cur.lines++
				prev = ln
				continue
			}
		}
		flush()
		cur = &block{kind: kindPara, size: ln.size, bold: ln.bold, lines: 1, x0: ln.box.X0, first: l.page, last: l.page, leaf: l.leaves,
			boxes: []docstruct.Box{pageBox(l.page, ln.box)}, frags: ln.frags}
		parts = append(parts, ln.text)
		prev = ln
	}
	flush()
}

// endsParagraph reports a paragraph ended by prev though no space follows it: prev
// closes a sentence, and the first word of ln would have fitted in the room left at
// its end (a line is only broken early where the writer broke it).
func endsParagraph(prev, ln line, right float64) bool {
	last, _ := utf8.DecodeLastRuneInString(prev.text)
	if !strings.ContainsRune(".!?:\"”)", last) || ln.chars == 0 {
		return false
	}
	word, _, _ := strings.Cut(ln.text, " ")
	perChar := (ln.box.X1 - ln.box.X0) / float64(utf8.RuneCountInString(ln.text))
	need := perChar * float64(utf8.RuneCountInString(word)+1)
	return right-prev.box.X1 > need*1.1
}

// sameSize: sizes half a point or 6 % apart are one (recognised text wavers).
func sameSize(a, b float64) bool { return math.Abs(a-b) <= math.Max(0.5, 0.06*math.Max(a, b)) }

// joinLines joins the lines of a paragraph, mending words hyphenated across lines.
func joinLines(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			prev := parts[i-1]
			r, _ := utf8.DecodeRuneInString(p)
			if strings.HasSuffix(prev, "-") && len(prev) > 1 && unicode.IsLower(r) {
				before, _ := utf8.DecodeLastRuneInString(prev[:len(prev)-1])
				if unicode.IsLetter(before) {
					s := b.String()
					b.Reset()
					b.WriteString(s[:len(s)-1])
					b.WriteString(p)
					continue
				}
			}
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}
