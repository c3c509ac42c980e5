package aiready_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/aiready/aireadytest"
)

// Token counts of known strings, as OpenAI's tiktoken (and the independent
// gpt-tokenizer) count them.
func TestTokenCounts(t *testing.T) {
	for _, c := range []struct {
		text          string
		cl100k, o200k int
	}{
		{"hello world", 2, 2},
		{"Hello, world!", 4, 4},
		{"tiktoken is great!", 6, 6},
		{"antidisestablishmentarianism", 6, 6},
		{"2 + 2 = 4", 7, 7},
		{"お誕生日おめでとう", 9, 8},
	} {
		for enc, want := range map[string]int{aiready.TokenizerCL100K: c.cl100k, aiready.TokenizerO200K: c.o200k} {
			got, err := aiready.Tokens(enc, c.text)
			if err != nil || got != want {
				t.Errorf("%s %q: %d tokens (%v), want %d", enc, c.text, got, err, want)
			}
		}
	}
	if _, err := aiready.Tokens("p50k_base", "x"); err == nil {
		t.Error("an unknown tokenizer was accepted")
	}
}

// pdfWord is a word PDFium draws, with its box.
type pdfWord struct {
	page           int
	text           string
	x0, y0, x1, y1 float64
}

// pdfWords reads every word of a PDF with its box from PDFium's characters.
func pdfWords(t *testing.T, path string) []pdfWord {
	t.Helper()
	d, err := pool.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pages := make([]int, d.PageCount())
	for i := range pages {
		pages[i] = i + 1
	}
	texts, err := d.TextPages(context.Background(), pages, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []pdfWord
	for _, pt := range texts {
		for _, r := range pt.Runs {
			var cur *pdfWord
			for _, c := range r.Chars {
				if !unicode.IsLetter(c.Rune) && !unicode.IsDigit(c.Rune) {
					if cur != nil {
						out = append(out, *cur)
					}
					cur = nil
					continue
				}
				if cur == nil {
					cur = &pdfWord{page: pt.Page, x0: c.Box.X0, y0: c.Box.Y0, x1: c.Box.X1, y1: c.Box.Y1}
				}
				cur.text += strings.ToLower(string(c.Rune))
				cur.x0, cur.y0 = math.Min(cur.x0, c.Box.X0), math.Min(cur.y0, c.Box.Y0)
				cur.x1, cur.y1 = math.Max(cur.x1, c.Box.X1), math.Max(cur.y1, c.Box.Y1)
			}
			if cur != nil {
				out = append(out, *cur)
			}
		}
	}
	return out
}

// checkChunks checks every chunk keeps to max_tokens (recounted), and every word of
// its text is drawn inside one of its boxes on one of its pages.
func checkChunks(t *testing.T, r *result, words []pdfWord, maxTokens int) {
	t.Helper()
	for _, c := range r.chunks.Chunks {
		counted := c.Text
		if c.EmbedText != "" {
			counted = c.EmbedText
		}
		n, err := aiready.Tokens(r.chunks.Tokenizer, counted)
		if err != nil || n != c.Tokens || n > maxTokens {
			t.Fatalf("chunk %d: %d tokens said, %d counted (%v), limit %d", c.Index, c.Tokens, n, err, maxTokens)
		}
		if len(c.Boxes) == 0 || len(c.Pages) == 0 {
			t.Fatalf("chunk %d has no boxes: %q", c.Index, c.Text)
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(c.Text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			inside := false
			for _, pw := range words {
				if pw.text != w {
					continue
				}
				for _, b := range c.Boxes {
					if b.Page == pw.page && pw.x0 >= b.X0-1 && pw.x1 <= b.X1+1 && pw.y0 >= b.Y0-1 && pw.y1 <= b.Y1+1 {
						inside = true
					}
				}
			}
			if !inside {
				t.Fatalf("chunk %d holds %q, drawn in none of its boxes %+v", c.Index, w, c.Boxes)
			}
		}
	}
}

// Chunks of a document read from its own format (DOCX) and of a PDF: within
// max_tokens however small, their boxes holding their words as PDFium draws them.
func TestChunkTokensAndBoxes(t *testing.T) {
	dir := t.TempDir()
	src := aireadytest.TextSource(8, "borderless")
	for i := range 6 {
		src.Elements = append(src.Elements, aireadytest.Element{Kind: aireadytest.ParagraphElement, Text: aireadytest.Prose(fmt.Sprintf("more%d", i), 1, 6)})
	}
	html := filepath.Join(dir, "long.html")
	if err := os.WriteFile(html, []byte(src.HTML()), 0o600); err != nil {
		t.Fatal(err)
	}
	aireadytest.Convert(t, dir, dir, "HTML (StarWriter)", "docx:MS Word 2007 XML", html)
	aireadytest.Convert(t, dir, dir, "HTML (StarWriter)", "pdf:writer_pdf_Export", html)
	pdf := filepath.Join(dir, "long.pdf")
	words := pdfWords(t, pdf)
	for _, max := range []int{48, 120, 512} {
		opts := fmt.Sprintf(`{"max_tokens":%d}`, max)
		for _, c := range []struct{ name, src, pdf string }{{"DOCX", filepath.Join(dir, "long.docx"), pdf}, {"PDF", pdf, ""}} {
			t.Run(fmt.Sprintf("%s-%d", c.name, max), func(t *testing.T) {
				r := extract(t, c.src, c.pdf, opts)
				if r.chunks.MaxTokens != max || r.chunks.Tokenizer != "cl100k_base" || len(r.chunks.Chunks) < 2 {
					t.Fatalf("chunks.json: max_tokens %d, tokenizer %s, %d chunks", r.chunks.MaxTokens, r.chunks.Tokenizer, len(r.chunks.Chunks))
				}
				checkChunks(t, r, words, max)
				// Every sentence is in some chunk.
				var all strings.Builder
				for _, ch := range r.chunks.Chunks {
					all.WriteString(ch.Text + "\n")
				}
				for i := range 6 {
					if s := aireadytest.Sentence(fmt.Sprintf("more%d", i), 6); !strings.Contains(all.String(), s) {
						t.Fatalf("%q is in no chunk", s)
					}
				}
			})
		}
	}
}

// The chunking options: overlap, contextualize, merge_small, cross_sections and the
// o200k_base tokenizer.
func TestChunkOptions(t *testing.T) {
	dir := t.TempDir()
	src := &aireadytest.Source{Name: "opts"}
	for ch := 1; ch <= 2; ch++ {
		src.Elements = append(src.Elements, aireadytest.Element{Kind: aireadytest.HeadingElement, Level: 1, Text: fmt.Sprintf("Chapter %d", ch)})
		for s := 1; s <= 3; s++ {
			src.Elements = append(src.Elements,
				aireadytest.Element{Kind: aireadytest.HeadingElement, Level: 2, Text: fmt.Sprintf("Part %d.%d", ch, s)},
				aireadytest.Element{Kind: aireadytest.ParagraphElement, Text: aireadytest.Prose(fmt.Sprintf("c%dp%d", ch, s), 1, 1)})
		}
		src.Elements = append(src.Elements, aireadytest.Element{Kind: aireadytest.ParagraphElement, Text: aireadytest.Prose(fmt.Sprintf("long%d", ch), 1, 12)})
	}
	html := filepath.Join(dir, "opts.html")
	if err := os.WriteFile(html, []byte(src.HTML()), 0o600); err != nil {
		t.Fatal(err)
	}
	base := extract(t, html, "", `{"max_tokens":64}`)
	for _, c := range base.chunks.Chunks {
		if c.Tokens > 64 || len(c.Pages) != 0 || len(c.Boxes) != 0 {
			t.Fatalf("chunk %d of a page-less document: %d tokens, pages %v", c.Index, c.Tokens, c.Pages)
		}
		if strings.Contains(c.Text, "# Chapter 1") && strings.Contains(c.Text, "Chapter 2") {
			t.Fatalf("chunk %d spans two top-level sections: %q", c.Index, c.Text)
		}
	}
	// Overlap: a paragraph cut in two repeats the end of the first part.
	ov := extract(t, html, "", `{"max_tokens":64,"overlap_tokens":16}`)
	found := false
	for i := 1; i < len(ov.chunks.Chunks); i++ {
		prev, cur := ov.chunks.Chunks[i-1], ov.chunks.Chunks[i]
		if strings.Contains(prev.Text, "long1") && strings.Contains(cur.Text, "long1") {
			pw, cw := strings.Fields(prev.Text), strings.Fields(cur.Text)
			for k := 3; k <= min(len(pw), len(cw)); k++ {
				if strings.Join(pw[len(pw)-k:], " ") == strings.Join(cw[:k], " ") {
					found = true
				}
			}
		}
		if cur.Tokens > 64 {
			t.Fatalf("chunk %d over max_tokens with overlap: %d", i, cur.Tokens)
		}
	}
	if !found {
		t.Fatal("no chunk starts with the end of the one before")
	}
	// Contextualize: embed_text is the heading path, then the text; tokens count it.
	cx := extract(t, html, "", `{"max_tokens":64,"contextualize":true}`)
	for _, c := range cx.chunks.Chunks {
		want := strings.Join(c.HeadingPath, " > ") + "\n\n" + c.Text
		n, _ := aiready.Tokens("", want)
		if c.EmbedText != want || c.Tokens != n || n > 64 {
			t.Fatalf("chunk %d: embed_text %q, %d tokens (%d counted)", c.Index, c.EmbedText, c.Tokens, n)
		}
	}
	// merge_small: the short parts under one chapter share chunks.
	ms := extract(t, html, "", `{"max_tokens":512,"merge_small":true}`)
	plain := extract(t, html, "", `{"max_tokens":512}`)
	if len(ms.chunks.Chunks) >= len(plain.chunks.Chunks) || len(ms.chunks.Chunks) < 2 {
		t.Fatalf("merge_small: %d chunks, without: %d", len(ms.chunks.Chunks), len(plain.chunks.Chunks))
	}
	for _, c := range ms.chunks.Chunks {
		if strings.Contains(c.Text, "Chapter 1") && strings.Contains(c.Text, "Chapter 2") {
			t.Fatalf("merge_small let a chunk span two chapters: %q", c.Text)
		}
	}
	cross := extract(t, html, "", `{"max_tokens":1024,"chunk_size":10000,"merge_small":true,"cross_sections":true}`)
	if len(cross.chunks.Chunks) != 1 {
		t.Fatalf("cross_sections: %d chunks, want the one that holds all", len(cross.chunks.Chunks))
	}
	// o200k_base counts differently, and chunks.json says which was used.
	o2 := extract(t, html, "", `{"max_tokens":64,"tokenizer":"o200k_base"}`)
	if o2.chunks.Tokenizer != "o200k_base" {
		t.Fatalf("tokenizer %s", o2.chunks.Tokenizer)
	}
	for _, c := range o2.chunks.Chunks {
		if n, _ := aiready.Tokens("o200k_base", c.Text); n != c.Tokens || n > 64 {
			t.Fatalf("o200k chunk %d: %d tokens, %d counted", c.Index, c.Tokens, n)
		}
	}
}
