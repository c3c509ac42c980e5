package docstruct

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// ReadMarkdown reads a Markdown (GitHub-flavoured) document's structure: headings,
// paragraphs, nested lists, pipe tables, images, code blocks and footnotes. Raw HTML
// blocks are not read.
func ReadMarkdown(src []byte) *Document {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote))
	root := md.Parser().Parse(text.NewReader(src))
	m := &mdReader{src: src}
	m.blocks(root, -1)
	return &Document{Blocks: m.out}
}

type mdReader struct {
	src   []byte
	out   []*Block
	notes []*Block
}

func (m *mdReader) blocks(n ast.Node, depth int) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Heading:
			if t := cleanText(m.inline(c)); t != "" {
				m.out = append(m.out, &Block{Kind: Heading, Level: c.Level, Text: t})
			}
		case *ast.Paragraph, *ast.TextBlock:
			m.para(c)
		case *ast.List:
			m.list(c, depth+1)
		case *east.Table:
			m.table(c)
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			var b strings.Builder
			lines := c.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				b.Write(seg.Value(m.src))
			}
			if t := strings.TrimRight(b.String(), "\n"); strings.TrimSpace(t) != "" {
				m.out = append(m.out, &Block{Kind: Code, Text: t})
			}
		case *east.FootnoteList:
			for f := c.FirstChild(); f != nil; f = f.NextSibling() {
				fn, ok := f.(*east.Footnote)
				if !ok {
					continue
				}
				sub := &mdReader{src: m.src}
				sub.blocks(fn, depth)
				var parts []string
				for _, b := range sub.out {
					parts = append(parts, b.Text)
				}
				m.notes = append(m.notes, &Block{Kind: Footnote, Label: strconv.Itoa(fn.Index), Text: strings.Join(parts, " ")})
			}
		case *ast.HTMLBlock, *ast.ThematicBreak:
		default:
			m.blocks(c, depth)
		}
	}
	if n.Parent() == nil {
		m.out = append(m.out, m.notes...)
		m.notes = nil
	}
}

// para adds a paragraph, with its images as blocks of their own after it.
func (m *mdReader) para(n ast.Node) {
	var imgs []*Block
	var b strings.Builder
	m.inlineTo(&b, n, &imgs)
	if t := cleanText(b.String()); t != "" {
		m.out = append(m.out, &Block{Kind: Paragraph, Text: t})
	}
	m.out = append(m.out, imgs...)
}

func (m *mdReader) inline(n ast.Node) string {
	var b strings.Builder
	m.inlineTo(&b, n, nil)
	return b.String()
}

func (m *mdReader) inlineTo(b *strings.Builder, n ast.Node, imgs *[]*Block) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(m.src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.CodeSpan:
			m.inlineTo(b, c, imgs)
		case *ast.Image:
			if imgs != nil {
				*imgs = append(*imgs, &Block{Kind: Image, Text: cleanText(m.inline(c))})
			} else {
				b.WriteString(m.inline(c))
			}
		case *east.FootnoteLink:
			b.WriteString("[^" + strconv.Itoa(c.Index) + "]")
		case *ast.RawHTML:
		default:
			m.inlineTo(b, c, imgs)
		}
	}
}

func (m *mdReader) list(l *ast.List, depth int) {
	num := l.Start
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		item := &Block{Kind: ListItem, Level: min(depth, 8), Ordered: l.IsOrdered()}
		if item.Ordered {
			item.Marker = strconv.Itoa(num) + string(l.Marker)
			num++
		}
		m.out = append(m.out, item)
		sub := &mdReader{src: m.src}
		sub.blocks(it, depth)
		var rest []*Block
		item.Text, rest = itemText(sub.out)
		m.out = append(m.out, rest...)
		m.notes = append(m.notes, sub.notes...)
	}
}

func (m *mdReader) table(t *east.Table) {
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			row = append(row, cleanText(m.inline(c)))
		}
		rows = append(rows, row)
	}
	if b := newTable(rows, 1); b != nil {
		m.out = append(m.out, b)
	}
}
