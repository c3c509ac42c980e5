package aiready

import (
	"strings"
	"unicode/utf8"
)

// markdownOf renders one block.
func markdownOf(b *block) string {
	switch b.kind {
	case kindHeading:
		return strings.Repeat("#", max(1, b.level)) + " " + b.text
	case kindItem:
		return strings.Repeat("    ", b.level) + itemMarker(b) + " " + b.text
	case kindTable:
		return pipeTable(b.rows)
	}
	return escapeStart(b.text)
}

func itemMarker(b *block) string {
	switch {
	case b.marker == "-":
		return "-"
	case b.ordered:
		return strings.TrimSuffix(strings.TrimSuffix(b.marker, ")"), ".") + "."
	}
	return "- " + b.marker
}

// escapeStart keeps a paragraph from reading as markdown structure.
func escapeStart(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '#', '>', '|', '=':
		return `\` + s
	case '-', '*', '+':
		if len(s) == 1 || s[1] == ' ' || s[1] == s[0] {
			return `\` + s
		}
	}
	if _, _, ok := orderedStart(s); ok {
		i := strings.IndexAny(s, ".)")
		return s[:i] + `\` + s[i:]
	}
	return s
}

func orderedStart(s string) (string, string, bool) {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i+1 >= len(s) || (s[i] != '.' && s[i] != ')') || s[i+1] != ' ' {
		return "", "", false
	}
	return s[:i+1], s[i+2:], true
}

// pipeTable renders rows as a pipe table, the first row as its header.
func pipeTable(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	writeRow(&b, rows[0])
	b.WriteByte('\n')
	b.WriteString(separatorRow(len(rows[0])))
	for _, r := range rows[1:] {
		b.WriteByte('\n')
		writeRow(&b, r)
	}
	return b.String()
}

func separatorRow(n int) string {
	return "|" + strings.Repeat(" --- |", n)
}

func rowMarkdown(r []string) string {
	var b strings.Builder
	writeRow(&b, r)
	return b.String()
}

func writeRow(b *strings.Builder, r []string) {
	b.WriteByte('|')
	for _, c := range r {
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(c, "|", `\|`))
		b.WriteString(" |")
	}
}

// separator is what goes between two blocks: the items of one list sit on
// consecutive lines; a numbered list after a bulleted one (or the reverse) is another.
func separator(prev, next *block) string {
	if prev.kind == kindItem && next.kind == kindItem && (next.level > 0 || prev.ordered == next.ordered) {
		return "\n"
	}
	return "\n\n"
}

func (d *document) markdown() string {
	var b strings.Builder
	for i, bl := range d.blocks {
		if i > 0 {
			b.WriteString(separator(d.blocks[i-1], bl))
		}
		b.WriteString(markdownOf(bl))
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// text is the document as plain text: blocks apart by blank lines, list items
// indented, table cells apart by tabs.
func (d *document) text() string {
	var b strings.Builder
	for i, bl := range d.blocks {
		if i > 0 {
			b.WriteString(separator(d.blocks[i-1], bl))
		}
		switch bl.kind {
		case kindItem:
			m := bl.marker
			if m == "-" {
				m = "•"
			}
			b.WriteString(strings.Repeat("  ", bl.level) + m + " " + bl.text)
		case kindTable:
			for j, r := range bl.rows {
				if j > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(strings.Join(r, "\t"))
			}
		default:
			b.WriteString(bl.text)
		}
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// chunks cuts the document into chunks of at most size characters: a heading starts
// a chunk, blocks are added while they fit, a block larger than a chunk is cut at
// sentences (then words), a table between rows with its header repeated.
func (d *document) chunks(size int) []Chunk {
	out := []Chunk{}
	type heading struct {
		level int
		text  string
	}
	var path []heading
	snapshot := func() []string {
		s := make([]string, len(path))
		for i, h := range path {
			s[i] = h.text
		}
		return s
	}
	var (
		b            strings.Builder
		n            int
		pages        []int
		headingsOnly = true
		curPath      []string
		last         *block
	)
	flush := func() {
		if n > 0 {
			out = append(out, Chunk{Index: len(out), Text: b.String(), Characters: n, Pages: pages, HeadingPath: curPath})
		}
		b.Reset()
		n, pages, headingsOnly, last = 0, nil, true, nil
		curPath = snapshot()
	}
	addPages := func(bl *block) {
		for p := bl.first; p <= bl.last; p++ {
			if len(pages) == 0 || pages[len(pages)-1] < p {
				pages = append(pages, p)
			}
		}
	}
	add := func(bl *block, piece string) {
		sep := ""
		if n > 0 {
			sep = separator(last, bl)
		}
		pn := utf8.RuneCountInString(piece)
		if n > 0 && n+len(sep)+pn > size {
			flush()
			sep = ""
		}
		b.WriteString(sep)
		b.WriteString(piece)
		n += len(sep) + pn
		addPages(bl)
		last = bl
	}
	curPath = []string{}
	for _, bl := range d.blocks {
		if bl.kind == kindHeading {
			for len(path) > 0 && path[len(path)-1].level >= bl.level {
				path = path[:len(path)-1]
			}
			path = append(path, heading{bl.level, bl.text})
			if !headingsOnly {
				flush()
			}
			for _, piece := range pieces(bl, size) {
				add(bl, piece)
			}
			curPath = snapshot()
			continue
		}
		for _, piece := range pieces(bl, size) {
			add(bl, piece)
			headingsOnly = false
		}
	}
	flush()
	return out
}

// pieces is a block's markdown, cut to fit in size characters when it does not.
func pieces(bl *block, size int) []string {
	md := markdownOf(bl)
	if utf8.RuneCountInString(md) <= size {
		return []string{md}
	}
	if bl.kind != kindTable {
		return splitText(md, size)
	}
	head := rowMarkdown(bl.rows[0]) + "\n" + separatorRow(len(bl.rows[0]))
	hn := utf8.RuneCountInString(head)
	var out []string
	var b strings.Builder
	n := 0
	for _, r := range bl.rows[1:] {
		row := rowMarkdown(r)
		rn := utf8.RuneCountInString(row)
		if n > 0 && n+1+rn > size {
			out = append(out, b.String())
			b.Reset()
			n = 0
		}
		if n == 0 {
			if hn+1+rn <= size {
				b.WriteString(head)
				n = hn
			} else if rn > size {
				// A row longer than a chunk cannot stay whole: its words are split.
				out = append(out, splitText(row, size)...)
				continue
			}
		}
		if n > 0 {
			b.WriteByte('\n')
			n++
		}
		b.WriteString(row)
		n += rn
	}
	if n > 0 {
		out = append(out, b.String())
	}
	return out
}

// splitText cuts text into pieces of at most size characters at sentence ends,
// else at spaces, else anywhere.
func splitText(s string, size int) []string {
	var out []string
	var b strings.Builder
	n := 0
	emit := func() {
		if n > 0 {
			out = append(out, strings.TrimSpace(b.String()))
		}
		b.Reset()
		n = 0
	}
	for _, sent := range sentences(s) {
		sn := utf8.RuneCountInString(sent)
		if n > 0 && n+1+sn > size {
			emit()
		}
		if sn > size {
			for _, w := range strings.Fields(sent) {
				wn := utf8.RuneCountInString(w)
				if n > 0 && n+1+wn > size {
					emit()
				}
				for wn > size {
					head := string([]rune(w)[:size])
					out = append(out, head)
					w = string([]rune(w)[size:])
					wn -= size
				}
				if n > 0 {
					b.WriteByte(' ')
					n++
				}
				b.WriteString(w)
				n += wn
			}
			continue
		}
		if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(sent)
		n += sn
	}
	emit()
	return out
}

// sentences splits text after ". ", "! ", "? " and "; ".
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?' || s[i] == ';') && s[i+1] == ' ' {
			out = append(out, s[start:i+1])
			start = i + 2
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
