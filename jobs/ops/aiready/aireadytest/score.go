package aireadytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Parsed is a markdown output read back into elements.
type Parsed struct {
	Headings []Heading
	Items    []Item
	Tables   [][][]string
	// Lines are every line of text in order (table rows as their cells joined).
	Lines []string
}

// Heading is a heading with its level.
type Heading struct {
	Level int
	Text  string
}

var (
	headingLine = regexp.MustCompile(`^(#{1,6}) (.*)$`)
	itemLine    = regexp.MustCompile(`^( *)(?:[-*+]|\d+[.)]) (.*)$`)
)

// ParseMarkdown reads headings, list items (depth from four-space indents), pipe
// tables and the other lines of markdown.
func ParseMarkdown(md string) *Parsed {
	p := &Parsed{}
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "|"):
			var t [][]string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
				cells := splitRow(lines[i])
				if isSeparator(cells) {
					continue
				}
				t = append(t, cells)
				p.Lines = append(p.Lines, strings.Join(cells, " "))
			}
			i--
			p.Tables = append(p.Tables, t)
		case headingLine.MatchString(l):
			m := headingLine.FindStringSubmatch(l)
			p.Headings = append(p.Headings, Heading{len(m[1]), strings.TrimSpace(m[2])})
			p.Lines = append(p.Lines, m[2])
		case itemLine.MatchString(l):
			m := itemLine.FindStringSubmatch(l)
			p.Items = append(p.Items, Item{Depth: len(m[1]) / 4, Text: strings.TrimSpace(m[2])})
			p.Lines = append(p.Lines, m[2])
		case strings.TrimSpace(l) != "":
			p.Lines = append(p.Lines, strings.TrimSpace(l))
		}
	}
	return p
}

func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "|"), "|")
	var cells []string
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' && i+1 < len(l) && l[i+1] == '|' {
			b.WriteByte('|')
			i++
			continue
		}
		if l[i] == '|' {
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteByte(l[i])
	}
	return append(cells, strings.TrimSpace(b.String()))
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" || c == "" {
			return false
		}
	}
	return true
}

// Truth is what a source's output must hold.
type Truth struct {
	Headings []Heading
	Items    []Item
	Tables   [][][]string
	// Order is the texts in reading order: headings, paragraphs, items, table rows.
	Order []string
}

// Truth returns what the source's markdown must hold. A workbook's sheets are
// headings at level 1 above their tables; a deck's slide titles are headings at
// level 1 with their bullets as list items.
func (s *Source) Truth() *Truth {
	t := &Truth{}
	for _, e := range s.Elements {
		switch e.Kind {
		case HeadingElement:
			t.Headings = append(t.Headings, Heading{e.Level, e.Text})
			t.Order = append(t.Order, e.Text)
		case ParagraphElement:
			t.Order = append(t.Order, e.Text)
		case ListElement:
			for _, it := range e.Items {
				t.Items = append(t.Items, it)
				t.Order = append(t.Order, it.Text)
			}
		case TableElement:
			g := e.Table.Grid()
			t.Tables = append(t.Tables, g)
			for _, r := range g {
				t.Order = append(t.Order, strings.Join(r, " "))
			}
		}
	}
	for _, sh := range s.Sheets {
		t.Headings = append(t.Headings, Heading{1, sh.Name})
		t.Tables = append(t.Tables, sh.Rows)
		t.Order = append(t.Order, sh.Name)
		for _, r := range sh.Rows {
			t.Order = append(t.Order, strings.Join(r, " "))
		}
	}
	for _, sl := range s.Slides {
		t.Headings = append(t.Headings, Heading{1, sl.Title})
		t.Order = append(t.Order, sl.Title)
		for _, it := range sl.Bullets {
			t.Items = append(t.Items, it)
			t.Order = append(t.Order, it.Text)
		}
	}
	return t
}

// Score is how well an output holds a source's truth.
type Score struct {
	HeadingTP, HeadingPred, HeadingTrue int
	CellTP, CellPred, CellTrue          int
	ItemsFound, ItemsTrue               int
	OrderAgree, OrderPairs              int
	Misses                              []string
}

// Add sums another score into s.
func (s *Score) Add(o Score) {
	s.HeadingTP += o.HeadingTP
	s.HeadingPred += o.HeadingPred
	s.HeadingTrue += o.HeadingTrue
	s.CellTP += o.CellTP
	s.CellPred += o.CellPred
	s.CellTrue += o.CellTrue
	s.ItemsFound += o.ItemsFound
	s.ItemsTrue += o.ItemsTrue
	s.OrderAgree += o.OrderAgree
	s.OrderPairs += o.OrderPairs
	s.Misses = append(s.Misses, o.Misses...)
}

func f1(tp, pred, truth int) float64 {
	if truth == 0 && pred == 0 {
		return 1
	}
	if tp == 0 {
		return 0
	}
	p, r := float64(tp)/float64(pred), float64(tp)/float64(truth)
	return 2 * p * r / (p + r)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// HeadingF1 is the F1 of (level, text) headings.
func (s *Score) HeadingF1() float64 { return f1(s.HeadingTP, s.HeadingPred, s.HeadingTrue) }

// CellF1 is the F1 of table cells, each its text at its row and column.
func (s *Score) CellF1() float64 { return f1(s.CellTP, s.CellPred, s.CellTrue) }

// ItemRecall is the share of list items found with their text and depth.
func (s *Score) ItemRecall() float64 { return ratio(s.ItemsFound, s.ItemsTrue) }

// OrderAgreement is the share of consecutive truth texts found in the same order.
func (s *Score) OrderAgreement() float64 { return ratio(s.OrderAgree, s.OrderPairs) }

// Compare scores markdown against the truth.
func (t *Truth) Compare(md string) Score {
	p := ParseMarkdown(md)
	var s Score
	// Headings: a multiset match of (level, text).
	left := map[Heading]int{}
	for _, h := range t.Headings {
		left[h]++
	}
	s.HeadingTrue, s.HeadingPred = len(t.Headings), len(p.Headings)
	for _, h := range p.Headings {
		if left[h] > 0 {
			left[h]--
			s.HeadingTP++
		}
	}
	for h, n := range left {
		if n > 0 {
			s.Misses = append(s.Misses, fmt.Sprintf("heading %d %q", h.Level, h.Text))
		}
	}
	// Tables: each true table against the output table sharing most cells.
	for _, tt := range t.Tables {
		for _, r := range tt {
			s.CellTrue += len(r)
		}
	}
	for _, pt := range p.Tables {
		for _, r := range pt {
			s.CellPred += len(r)
		}
	}
	used := map[int]bool{}
	for ti, tt := range t.Tables {
		best, bi := 0, -1
		for i, pt := range p.Tables {
			if used[i] {
				continue
			}
			if n := sameCells(tt, pt); n > best {
				best, bi = n, i
			}
		}
		if bi >= 0 {
			used[bi] = true
		}
		s.CellTP += best
		if n := cellCount(tt); best < n {
			s.Misses = append(s.Misses, fmt.Sprintf("table %d: %d of %d cells", ti+1, best, n))
		}
	}
	// List items: text and depth.
	items := map[Item]int{}
	for _, it := range p.Items {
		items[Item{Depth: it.Depth, Text: it.Text}]++
	}
	s.ItemsTrue = len(t.Items)
	for _, it := range t.Items {
		k := Item{Depth: it.Depth, Text: it.Text}
		if items[k] > 0 {
			items[k]--
			s.ItemsFound++
		} else {
			s.Misses = append(s.Misses, fmt.Sprintf("item %d %q", it.Depth, it.Text))
		}
	}
	// Reading order: each consecutive pair of truth texts found in that order.
	pos := make([]int, len(t.Order))
	for i, text := range t.Order {
		pos[i] = -1
		for j, l := range p.Lines {
			if strings.Contains(l, text) {
				pos[i] = j
				break
			}
		}
	}
	for i := 1; i < len(pos); i++ {
		s.OrderPairs++
		if pos[i-1] >= 0 && pos[i] >= 0 && pos[i-1] <= pos[i] {
			s.OrderAgree++
		} else {
			s.Misses = append(s.Misses, fmt.Sprintf("order %q → %q", short(t.Order[i-1]), short(t.Order[i])))
		}
	}
	return s
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func cellCount(t [][]string) int {
	n := 0
	for _, r := range t {
		n += len(r)
	}
	return n
}

func sameCells(a, b [][]string) int {
	n := 0
	for i := range min(len(a), len(b)) {
		for j := range min(len(a[i]), len(b[i])) {
			if a[i][j] == b[i][j] {
				n++
			}
		}
	}
	return n
}

// Convert has LibreOffice (one soffice run, in a profile of its own under dir)
// convert files with an import filter ("" for LibreOffice's choice) to target, a
// --convert-to argument such as "docx:MS Word 2007 XML"; the outputs go to out.
func Convert(tb testing.TB, dir, out, infilter, target string, files ...string) {
	tb.Helper()
	if _, err := exec.LookPath("soffice"); err != nil {
		tb.Fatal("soffice is missing: apt-get install libreoffice-core-nogui libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui")
	}
	args := []string{"-env:UserInstallation=file://" + filepath.Join(dir, "profile"), "--headless"}
	if infilter != "" {
		args = append(args, "--infilter="+infilter)
	}
	args = append(args, "--convert-to", target, "--outdir", out)
	cmd := exec.Command("soffice", append(args, files...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("soffice --convert-to %s: %v: %s", target, err, b)
	}
	for _, f := range files {
		ext, _, _ := strings.Cut(target, ":")
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)) + "." + ext
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			tb.Fatalf("soffice made no %s", name)
		}
	}
}
