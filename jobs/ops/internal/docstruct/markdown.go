package docstruct

import (
	"strings"
)

// Markdown renders the document: headings as #…######, lists indented four spaces a
// level, tables as pipe tables (the first row the header), images as "[Image: alt]",
// code fenced, footnotes as "[^n]: text", speaker notes as a quote, and the start of
// each slide as an HTML comment.
func (d *Document) Markdown() string {
	var b strings.Builder
	for i, bl := range d.Blocks {
		if i > 0 {
			b.WriteString(Separator(d.Blocks[i-1], bl))
		}
		b.WriteString(BlockMarkdown(bl))
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// Text renders the document as plain text: blocks apart by blank lines, list items
// indented and marked "•" (or their numbers), table cells apart by tabs.
func (d *Document) Text() string {
	var b strings.Builder
	for i, bl := range d.Blocks {
		if i > 0 {
			b.WriteString(Separator(d.Blocks[i-1], bl))
		}
		b.WriteString(BlockText(bl))
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// Separator is what goes between two blocks: the items of one list sit on
// consecutive lines; anything else is a paragraph apart.
func Separator(prev, next *Block) string {
	if prev.Kind == ListItem && next.Kind == ListItem && (next.Level > 0 || prev.Level > 0 || prev.Ordered == next.Ordered) {
		return "\n"
	}
	return "\n\n"
}

// BlockMarkdown renders one block.
func BlockMarkdown(b *Block) string {
	switch b.Kind {
	case Heading:
		return strings.Repeat("#", min(6, max(1, b.Level))) + " " + b.Text
	case ListItem:
		return strings.Repeat("    ", b.Level) + itemMarker(b) + " " + escapeStart(b.Text)
	case Table:
		return PipeTable(b.Rows)
	case Image:
		if b.Text == "" {
			return "[Image]"
		}
		return "[Image: " + b.Text + "]"
	case Code:
		fence := "```"
		for strings.Contains(b.Text, fence) {
			fence += "`"
		}
		return fence + "\n" + b.Text + "\n" + fence
	case Footnote:
		return "[^" + b.Label + "]: " + b.Text
	case Notes:
		return "> Notes: " + strings.ReplaceAll(b.Text, "\n", "\n> ")
	case Section:
		return "<!-- " + strings.ReplaceAll(b.Text, "--", "- -") + " -->"
	}
	return escapeStart(b.Text)
}

// BlockText renders one block as plain text.
func BlockText(b *Block) string {
	switch b.Kind {
	case ListItem:
		m := b.Marker
		if !b.Ordered {
			m = "•"
		}
		return strings.Repeat("  ", b.Level) + m + " " + b.Text
	case Table:
		var s strings.Builder
		for j, r := range b.Rows {
			if j > 0 {
				s.WriteByte('\n')
			}
			s.WriteString(strings.Join(r, "\t"))
		}
		return s.String()
	case Image:
		if b.Text == "" {
			return "[Image]"
		}
		return "[Image: " + b.Text + "]"
	case Footnote:
		return "[" + b.Label + "] " + b.Text
	case Notes:
		return "Notes: " + b.Text
	case Section:
		return "[" + b.Text + "]"
	}
	return b.Text
}

func itemMarker(b *Block) string {
	if !b.Ordered {
		return "-"
	}
	m := strings.TrimSuffix(strings.TrimSuffix(b.Marker, ")"), ".")
	if m == "" {
		m = "1"
	}
	for _, c := range m {
		if c < '0' || c > '9' {
			// Letters and roman numerals are no Markdown list numbers: kept as text.
			return "- " + b.Marker
		}
	}
	return m + "."
}

// escapeStart keeps text from reading as Markdown structure where it starts.
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
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' ' {
		return s[:i] + `\` + s[i:]
	}
	return s
}

// PipeTable renders rows as a pipe table, the first row as its header.
func PipeTable(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(RowMarkdown(rows[0]))
	b.WriteByte('\n')
	b.WriteString(SeparatorRow(len(rows[0])))
	for _, r := range rows[1:] {
		b.WriteByte('\n')
		b.WriteString(RowMarkdown(r))
	}
	return b.String()
}

// SeparatorRow is a pipe table's line under its header.
func SeparatorRow(n int) string { return "|" + strings.Repeat(" --- |", n) }

// RowMarkdown renders one table row.
func RowMarkdown(r []string) string {
	var b strings.Builder
	b.WriteByte('|')
	for _, c := range r {
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " "))
		b.WriteString(" |")
	}
	return b.String()
}

// newTable makes a table block of rows whose first headerRows rows are headers: they
// become one header row, each column's header the texts above it joined top-down
// (a merged cell over several columns is repeated in each; over several header rows
// it is said once).
func newTable(rows [][]string, headerRows int) *Block {
	rows = normalizeTable(rows)
	if len(rows) == 0 {
		return nil
	}
	if headerRows > 1 && headerRows < len(rows) {
		head := make([]string, len(rows[0]))
		for c := range head {
			var parts []string
			for r := 0; r < headerRows; r++ {
				t := rows[r][c]
				if t != "" && (len(parts) == 0 || parts[len(parts)-1] != t) {
					parts = append(parts, t)
				}
			}
			head[c] = strings.Join(parts, " ")
		}
		rows = append([][]string{head}, rows[headerRows:]...)
	}
	return &Block{Kind: Table, Rows: rows}
}
