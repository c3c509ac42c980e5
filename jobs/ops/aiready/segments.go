package aiready

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/filemill/filemill/jobs/ops/pagetext"
)

type rect = pagetext.Rect

// segment is text set continuously on one line: words joined where the gap between
// them is a word space, split where it is wider (a table cell, another column) or
// where a vertical rule runs between them.
type segment struct {
	text         string
	box          rect
	size         float64
	bold, italic bool
	chars        int
	// frags are the segment's pieces set apart by any gap (not touching): table
	// cells closer than a wide word space are told apart by them.
	frags []frag
}

// frag is text set without a gap.
type frag struct {
	text string
	box  rect
}

// fragGap is the gap between runs, in ems, that parts fragments: more than the
// slack between touching runs of one word or one styled span.
const fragGap = 0.15

// pageData is one page reduced to what layout needs.
type pageData struct {
	page  int
	w, h  float64
	segs  []*segment
	rules []rect
	chars int
	ocr   bool
}

// newPageData reduces a page's text; ocr says its runs are recognised words, whose
// boxes hug their ink and whose size may be unknown.
func newPageData(pt *pagetext.Page, ocr bool) *pageData {
	p := &pageData{page: pt.Page, w: pt.Width, h: pt.Height, rules: pt.Rules, ocr: ocr}
	p.segs = buildSegments(pt.Runs, verticalRules(pt.Rules), ocr)
	for _, s := range p.segs {
		p.chars += s.chars
	}
	return p
}

func verticalRules(rules []rect) []rect {
	var out []rect
	for _, r := range rules {
		if r.X1-r.X0 <= 3 && r.Y1-r.Y0 > r.X1-r.X0 {
			out = append(out, r)
		}
	}
	return out
}

type run struct {
	text         string
	box          rect
	size         float64
	bold, italic bool
	n            int
}

// buildSegments groups runs into rows (boxes overlapping vertically by half the
// smaller height) and each row into segments.
func buildSegments(runs []pagetext.Run, vrules []rect, ocr bool) []*segment {
	rs := make([]run, 0, len(runs))
	for _, r := range runs {
		t := clean(r.Text)
		if strings.TrimSpace(t) == "" || !(r.Box.X1 > r.Box.X0) || !(r.Box.Y1 > r.Box.Y0) {
			continue
		}
		size := r.FontSize
		if size <= 0 || math.IsNaN(size) || math.IsInf(size, 0) {
			size = inkSize(t, r.Box.Y1-r.Box.Y0)
		}
		rs = append(rs, run{text: t, box: r.Box, size: size, bold: r.Bold, italic: r.Italic, n: utf8.RuneCountInString(t)})
	}
	slices.SortFunc(rs, func(a, b run) int { return cmpF((a.box.Y0+a.box.Y1)/2, (b.box.Y0+b.box.Y1)/2) })
	var out []*segment
	for i := 0; i < len(rs); {
		row := rect{X0: rs[i].box.X0, Y0: rs[i].box.Y0, X1: rs[i].box.X1, Y1: rs[i].box.Y1}
		j := i + 1
		for j < len(rs) && vOverlapHalf(row, rs[j].box) {
			row = union(row, rs[j].box)
			j++
		}
		line := rs[i:j]
		if ocr {
			row = evenRow(line)
		}
		slices.SortStableFunc(line, func(a, b run) int { return cmpF(a.box.X0, b.box.X0) })
		out = appendRowSegments(out, line, row, vrules)
		i = j
	}
	return out
}

// Proportions of a typical text face, in ems: the height of capitals and ascenders,
// of lowercase letters without them, and the depth of descenders.
const (
	emAscender  = 0.72
	emXHeight   = 0.52
	emDescender = 0.21
)

func ascends(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune("bdfhiklt()[]{}|/\\!?'\"#$%&@", r) || r > 0x7f && unicode.IsLetter(r)
	}) >= 0
}

func descends(s string) bool { return strings.ContainsAny(s, "gjpqyQ()[]{}|,;@$") }

// inkSize is the font size of a word whose ink is h high: its height in ems follows
// from its letters.
func inkSize(text string, h float64) float64 {
	top := emXHeight
	if ascends(text) {
		top = emAscender
	}
	if descends(text) {
		top += emDescender
	}
	return h / top
}

// evenRow gives the recognised words of one row one size (their median) and one
// box from the row's baseline, as a PDF's text layer would: neighbouring rows then
// stand as far apart as typeset lines do.
func evenRow(line []run) rect {
	sizes := make([]float64, len(line))
	for i, r := range line {
		sizes[i] = r.size
	}
	size := median(sizes)
	bases := make([]float64, len(line))
	for i, r := range line {
		bases[i] = r.box.Y1
		if descends(r.text) {
			bases[i] -= emDescender * size
		}
	}
	base := median(bases)
	row := rect{X0: math.Inf(1), Y0: base - 0.9*size, X1: math.Inf(-1), Y1: base + 0.25*size}
	for i := range line {
		line[i].size = size
		line[i].box.Y0, line[i].box.Y1 = row.Y0, row.Y1
		row.X0, row.X1 = math.Min(row.X0, line[i].box.X0), math.Max(row.X1, line[i].box.X1)
	}
	return row
}

// cellGap is the gap between runs, in ems, that parts them into segments.
const cellGap = 0.55

func appendRowSegments(out []*segment, line []run, row rect, vrules []rect) []*segment {
	start := len(out)
	var cur *segment
	var sb strings.Builder
	var boldN, italicN, bestN int
	flush := func() {
		if cur == nil {
			return
		}
		cur.text = strings.TrimSpace(collapseSpaces(sb.String()))
		cur.bold = boldN*2 >= cur.chars
		cur.italic = italicN*2 >= cur.chars
		if cur.text != "" {
			out = append(out, cur)
		}
		cur = nil
	}
	for i, r := range line {
		if cur != nil {
			size := math.Max(cur.size, r.size)
			gap := r.box.X0 - cur.box.X1
			// A lone glyph set apart at the start of a row may be a bullet: kept apart.
			bullet := i == 1 && utf8.RuneCountInString(line[0].text) == 1 && gap >= 0.5*size &&
				strings.ContainsAny(line[0].text, misreadBullets+"•-–*·")
			// Runs apart by more than a wide word space are cells or columns: a text
			// layer's word spaces are characters of its runs, or gaps of a third of
			// an em between them; table cells stand at least half an em apart.
			if gap > cellGap*size || gap < -2*size || bullet || ruleBetween(vrules, cur.box.X1, r.box.X0, row) {
				flush()
			} else if gap > 0.12*size && !strings.HasSuffix(sb.String(), " ") && !strings.HasPrefix(r.text, " ") {
				sb.WriteByte(' ')
			}
		}
		if cur == nil {
			cur = &segment{box: r.box}
			sb.Reset()
			boldN, italicN, bestN = 0, 0, 0
		}
		if n := len(cur.frags); n > 0 && r.box.X0-cur.frags[n-1].box.X1 <= fragGap*math.Max(cur.size, r.size) {
			f := &cur.frags[n-1]
			if r.box.X0-f.box.X1 > 0.12*r.size && !strings.HasSuffix(f.text, " ") && !strings.HasPrefix(r.text, " ") {
				f.text += " "
			}
			f.text += r.text
			f.box = union(f.box, r.box)
		} else {
			cur.frags = append(cur.frags, frag{text: r.text, box: r.box})
		}
		sb.WriteString(r.text)
		cur.box = union(cur.box, r.box)
		cur.chars += r.n
		if r.n > bestN {
			cur.size, bestN = r.size, r.n
		}
		if r.bold {
			boldN += r.n
		}
		if r.italic {
			italicN += r.n
		}
	}
	flush()
	return mergeMarkers(out, len(out)-start)
}

// mergeMarkers joins a list marker set apart from its text (a bullet, then a tab) to
// the segment after it on the same row, so the bullets never read as a column. Only
// the segments of the row just added (the last n of out) are looked at.
func mergeMarkers(out []*segment, n int) []*segment {
	start := len(out) - n
	for i := len(out) - 2; i >= start; i-- {
		m, next := out[i], out[i+1]
		if r, n := utf8.DecodeRuneInString(m.text); n == len(m.text) && strings.ContainsRune(misreadBullets, r) &&
			i == start && next.box.X0-m.box.X1 >= 0.5*m.size {
			// Recognisers read bullets as one of these.
			m.text = "•"
		}
		if _, _, _, ok := listMarker(m.text + " x"); !ok || strings.Contains(m.text, " ") {
			continue
		}
		if next.box.X0-m.box.X1 > 8*math.Max(m.size, next.size) {
			continue
		}
		next.text = m.text + " " + next.text
		next.box = union(m.box, next.box)
		next.chars += m.chars
		next.frags = append(slices.Clone(m.frags), next.frags...)
		out = slices.Delete(out, i, i+1)
	}
	return out
}

// misreadBullets are what OCR makes of a bullet: alone at the start of a row and set
// apart from the text after it, they are taken for one.
const misreadBullets = "¢«»°©®eo*>■□●○◦▪"

func ruleBetween(vrules []rect, x0, x1 float64, row rect) bool {
	for _, r := range vrules {
		cx := (r.X0 + r.X1) / 2
		if cx >= x0-0.5 && cx <= x1+0.5 && math.Min(r.Y1, row.Y1)-math.Max(r.Y0, row.Y0) > (row.Y1-row.Y0)/2 {
			return true
		}
	}
	return false
}

// clean drops control characters and turns unusual spaces into plain ones.
func clean(s string) string {
	ok := true
	for _, c := range s {
		if c < ' ' || c == 0xA0 || c == 0xAD || c == 0xFFFD || (c >= 0x2000 && c <= 0x200B) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return strings.Map(func(c rune) rune {
		switch {
		case c == '\t', c == 0xA0, c >= 0x2000 && c <= 0x200A:
			return ' '
		case c < ' ', c == 0xAD, c == 0x200B, c == 0xFFFD:
			return -1
		}
		return c
	}, s)
}

func collapseSpaces(s string) string {
	if !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

func vOverlapHalf(a, b rect) bool {
	overlap := math.Min(a.Y1, b.Y1) - math.Max(a.Y0, b.Y0)
	h := math.Min(a.Y1-a.Y0, b.Y1-b.Y0)
	return overlap >= h/2
}

func union(a, b rect) rect {
	return rect{X0: math.Min(a.X0, b.X0), Y0: math.Min(a.Y0, b.Y0), X1: math.Max(a.X1, b.X1), Y1: math.Max(a.Y1, b.Y1)}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// listMarker splits a list item's marker from its text: bullets, and numbers or
// letters followed by "." or ")".
func listMarker(s string) (marker, rest string, ordered, ok bool) {
	r, n := utf8.DecodeRuneInString(s)
	switch r {
	case '•', '◦', '▪', '▫', '‣', '⁃', '○', '●', '■', '□', '➢', '►', '▶', '✓', '✔', '∙', '·', '\uf0b7', '\uf0a7':
		rest = strings.TrimSpace(s[n:])
		return "-", rest, false, rest != ""
	case '-', '–', '—', '*', '+', '¢', '«', '»', '°', '©', '®': // the last six: bullets as OCR reads them
		if len(s) > n && s[n] == ' ' {
			rest = strings.TrimSpace(s[n:])
			return "-", rest, false, rest != ""
		}
		return "", "", false, false
	}
	// "12." "12)" "a." "a)" "iv." "(a)" "(3)"
	i := 0
	paren := false
	if strings.HasPrefix(s, "(") {
		paren, i = true, 1
	}
	j := i
	for j < len(s) && j-i < 4 && (s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z') {
		j++
	}
	if j == i || j >= len(s) {
		return "", "", false, false
	}
	word := s[i:j]
	digits := strings.Trim(word, "0123456789") == ""
	roman := strings.Trim(word, "ivx") == ""
	if !digits && !roman && len(word) != 1 {
		return "", "", false, false
	}
	if digits && len(word) > 3 {
		return "", "", false, false
	}
	close := s[j]
	if paren && close != ')' || !paren && close != '.' && close != ')' {
		return "", "", false, false
	}
	if j+1 >= len(s) || s[j+1] != ' ' {
		return "", "", false, false
	}
	rest = strings.TrimSpace(s[j+1:])
	if rest == "" {
		return "", "", false, false
	}
	return s[:j+1], rest, digits, true
}

func hasLetter(s string) bool {
	for _, c := range s {
		if unicode.IsLetter(c) {
			return true
		}
	}
	return false
}
