package aiready_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/aiready/aireadytest"
)

// extract runs the extraction as the preset does: on pdf (the PDF the convert step
// made; "" when the source is read alone), with the job's file at src.
func extract(t *testing.T, src, pdf, opts string) *result {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f := domain.Detect(raw)
	source := domain.EngineFile{Path: src, Filename: filepath.Base(src), Format: f}
	in := domain.EngineInput{Operation: aiready.Operation, Options: engineOptions(t, aiready.Operation, opts), Path: src, Filename: source.Filename,
		Format: f, Source: source, WorkDir: work}
	if pdf != "" {
		in.Path, in.Filename, in.Format = pdf, filepath.Base(pdf), domain.Format{Extension: "pdf", MIMEType: "application/pdf"}
	}
	out, err := engine.Run(context.Background(), in)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(src), err)
	}
	r := &result{out: out}
	for _, a := range out.Artifacts {
		b, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		switch a.Name {
		case aiready.MarkdownName:
			r.md = string(b)
		case aiready.TextName:
			r.txt = string(b)
		case aiready.ChunksName:
			if err := json.Unmarshal(b, &r.chunks); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// fixtureSource has every feature the sources are compared on: headings of three
// levels, a nested list, a numbered list, a bordered table, borderless tables (cells
// a few points apart, numbers flush right, cells over several lines, one carried
// over a page break) and a table with a merged header cell.
func fixtureSource() *aireadytest.Source {
	s := aireadytest.TextSource(3, "ruled")
	s.Elements = append(s.Elements,
		aireadytest.Element{Kind: aireadytest.HeadingElement, Level: 2, Text: "Borderless Figures"},
		aireadytest.Element{Kind: aireadytest.TableElement, Table: &aireadytest.Table{Borderless: true, Rows: [][]string{
			{"Site", "Temperature", "Moisture"}, {"Birch Hollow", "14.2", "31"}, {"Cedar Ridge", "12.8", "27"}, {"Fern Gully", "15.1", "35"}}}},
		aireadytest.Element{Kind: aireadytest.ParagraphElement, Text: "Cells set close together, numbers flush right, a header centred over them."},
		aireadytest.Element{Kind: aireadytest.TableElement, Table: &aireadytest.Table{Borderless: true, Padding: 1, Rows: [][]string{
			{"Station", "Depth", "Salinity", "Remarks"}, {"Harbor mouth", "12.5", "31.2", "strong tidal current"},
			{"Inner basin", "6.0", "28.7", "calm"}, {"Old pier", "3.25", "30.1", "weed on the piles"}}}},
		aireadytest.Element{Kind: aireadytest.ParagraphElement, Text: "A narrow table whose remarks run over several lines, the other cells centred beside them."},
		aireadytest.Element{Kind: aireadytest.TableElement, Table: &aireadytest.Table{Borderless: true, Padding: 3, Width: 380, Rows: [][]string{
			{"Site", "Depth", "Remarks"}, {"North bay", "12.5", "strong tidal current along the western shore in spring and autumn months"},
			{"Inner basin", "6.0", "calm"}, {"Old pier", "3.25", "weed on the piles and a sandy bottom with old timbers half buried"}}}},
		aireadytest.Element{Kind: aireadytest.HeadingElement, Level: 2, Text: "Merged Header"},
		aireadytest.Element{Kind: aireadytest.TableElement, Table: &aireadytest.Table{Span: 2, Rows: [][]string{
			{"Sales", "", "Region"}, {"2023", "2024", "North"}, {"120", "135", "South"}}}},
		aireadytest.Element{Kind: aireadytest.ParagraphElement, Text: aireadytest.Prose("closing", 1, 2)},
	)
	return s
}

func TestNativeFormatsKeepTheSourceStructure(t *testing.T) {
	dir := t.TempDir()
	src := fixtureSource()
	html := filepath.Join(dir, "fixture.html")
	if err := os.WriteFile(html, []byte(src.HTML()), 0o600); err != nil {
		t.Fatal(err)
	}
	aireadytest.Convert(t, dir, dir, "HTML (StarWriter)", "docx:MS Word 2007 XML", html)
	aireadytest.Convert(t, dir, dir, "HTML (StarWriter)", "odt:writer8", html)
	aireadytest.Convert(t, dir, dir, "HTML (StarWriter)", "pdf:writer_pdf_Export", html)
	truth := src.Truth()
	for _, c := range []struct{ name, src, pdf string }{
		{"HTML", html, ""},
		{"DOCX", filepath.Join(dir, "fixture.docx"), filepath.Join(dir, "fixture.pdf")},
		{"ODT", filepath.Join(dir, "fixture.odt"), filepath.Join(dir, "fixture.pdf")},
		{"PDF", filepath.Join(dir, "fixture.pdf"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := extract(t, c.src, c.pdf, `{}`)
			s := truth.Compare(r.md)
			t.Logf("%s: heading F1 %.3f, cell F1 %.3f, items %.3f, order %.3f\n%s", c.name, s.HeadingF1(), s.CellF1(), s.ItemRecall(), s.OrderAgreement(), r.md)
			if len(s.Misses) > 0 {
				t.Errorf("%s misses: %s", c.name, strings.Join(s.Misses, "; "))
			}
		})
	}
}

// A deck of slides with titles, bullets two deep and speaker notes, made a PPTX and
// an ODP by LibreOffice, reads as one section per slide: the title a heading, the
// bullets nested, the notes marked, each slide's chunks on its own page.
func TestDeckKeepsItsSlides(t *testing.T) {
	dir := t.TempDir()
	src := aireadytest.DeckSource(4)
	fodp := filepath.Join(dir, "deck.fodp")
	if err := os.WriteFile(fodp, []byte(src.FODP()), 0o600); err != nil {
		t.Fatal(err)
	}
	aireadytest.Convert(t, dir, dir, "", "pptx:Impress MS PowerPoint 2007 XML", fodp)
	aireadytest.Convert(t, dir, dir, "", "odp:impress8", fodp)
	aireadytest.Convert(t, dir, dir, "", "pdf:impress_pdf_Export", fodp)
	truth := src.Truth()
	for _, name := range []string{"deck.pptx", "deck.odp"} {
		t.Run(name, func(t *testing.T) {
			r := extract(t, filepath.Join(dir, name), filepath.Join(dir, "deck.pdf"), `{}`)
			s := truth.Compare(r.md)
			if len(s.Misses) > 0 {
				t.Errorf("misses: %s\n%s", strings.Join(s.Misses, "; "), r.md)
			}
			for i, sl := range src.Slides {
				if !strings.Contains(r.md, fmt.Sprintf("<!-- Slide %d -->\n\n# %s", i+1, sl.Title)) {
					t.Errorf("slide %d does not open with its number and title:\n%s", i+1, r.md)
				}
				if sl.Notes != "" && !strings.Contains(r.md, "> Notes: "+sl.Notes) {
					t.Errorf("slide %d's notes are not marked:\n%s", i+1, r.md)
				}
			}
			if strings.ContainsFunc(r.md, func(c rune) bool { return c >= 0xE000 && c <= 0xF8FF }) {
				t.Errorf("private-use glyphs leaked:\n%s", r.md)
			}
			if len(r.chunks.Chunks) != len(src.Slides) {
				t.Fatalf("%d chunks for %d slides", len(r.chunks.Chunks), len(src.Slides))
			}
			for i, c := range r.chunks.Chunks {
				if len(c.Pages) != 1 || c.Pages[0] != i+1 || len(c.HeadingPath) != 1 || c.HeadingPath[0] != src.Slides[i].Title {
					t.Errorf("chunk %d: pages %v, heading path %q", i, c.Pages, c.HeadingPath)
				}
			}
		})
	}
}

// A workbook of two sheets, made an XLSX and an ODS by LibreOffice, reads as one
// section per sheet: the sheet's name a heading, its first row the table's header.
func TestWorkbookKeepsItsSheets(t *testing.T) {
	dir := t.TempDir()
	src := aireadytest.WorkbookSource(5)
	fods := filepath.Join(dir, "book.fods")
	if err := os.WriteFile(fods, []byte(src.FODS()), 0o600); err != nil {
		t.Fatal(err)
	}
	aireadytest.Convert(t, dir, dir, "", "xlsx:Calc MS Excel 2007 XML", fods)
	aireadytest.Convert(t, dir, dir, "", "ods:calc8", fods)
	aireadytest.Convert(t, dir, dir, "", "pdf:calc_pdf_Export", fods)
	truth := src.Truth()
	for _, name := range []string{"book.xlsx", "book.ods"} {
		t.Run(name, func(t *testing.T) {
			r := extract(t, filepath.Join(dir, name), filepath.Join(dir, "book.pdf"), `{}`)
			s := truth.Compare(r.md)
			if len(s.Misses) > 0 {
				t.Errorf("misses: %s\n%s", strings.Join(s.Misses, "; "), r.md)
			}
			for _, sh := range src.Sheets {
				want := "# " + sh.Name + "\n\n" + "| " + strings.Join(sh.Rows[0], " | ") + " |\n"
				if !strings.Contains(r.md, want) {
					t.Errorf("sheet %s does not open with its name and header row:\n%s", sh.Name, r.md)
				}
			}
			if len(r.chunks.Chunks) != 2 || r.chunks.Chunks[0].HeadingPath[0] != src.Sheets[0].Name || len(r.chunks.Chunks[0].Pages) == 0 {
				t.Errorf("chunks: %+v", r.chunks.Chunks)
			}
		})
	}
}

// Text in two and three columns is read column by column, headings across the page
// in their places.
func TestColumnsReadInOrder(t *testing.T) {
	for _, cols := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d", cols), func(t *testing.T) {
			src := aireadytest.ColumnsSource(cols, cols)
			path := filepath.Join(t.TempDir(), "cols.pdf")
			if err := os.WriteFile(path, aireadytest.ColumnsPDF(src, cols), 0o600); err != nil {
				t.Fatal(err)
			}
			r := extract(t, path, "", `{}`)
			if s := src.Truth().Compare(r.md); len(s.Misses) > 0 {
				t.Fatalf("misses: %s\n%s", strings.Join(s.Misses, "; "), r.md)
			}
		})
	}
}

// Pages from the page breaks a DOCX saved agree with the layout: DOCX made by
// LibreOffice (which saves no rendered breaks: converted), given the rendered breaks
// of LibreOffice's own layout as Word writes them (AddRenderedBreaks), are not
// converted, and read alone give every chunk the pages the PDF LibreOffice makes of
// them shows it on.
func TestPagesFromSavedBreaksAgreeWithTheLayout(t *testing.T) {
	dir := t.TempDir()
	var htmls []string
	for i, n := range []int{2, 4, 7} {
		src := &aireadytest.Source{Name: fmt.Sprintf("paged%d", i)}
		for p := range n {
			s := aireadytest.TextSource(800+10*i+p, []string{"ruled", "borderless", "merged"}[p%3])
			src.Elements = append(src.Elements, s.Elements...)
		}
		html := filepath.Join(dir, src.Name+".html")
		if err := os.WriteFile(html, []byte(src.HTML()), 0o600); err != nil {
			t.Fatal(err)
		}
		htmls = append(htmls, html)
	}
	aireadytest.Convert(t, dir, dir, "HTML (StarWriter)", "docx:MS Word 2007 XML", htmls...)
	var docxs []string
	for _, h := range htmls {
		docxs = append(docxs, strings.TrimSuffix(h, ".html")+".docx")
	}
	aireadytest.Convert(t, dir, dir, "", "pdf:writer_pdf_Export", docxs...)
	for _, lo := range docxs {
		t.Run(filepath.Base(lo), func(t *testing.T) {
			pdf := strings.TrimSuffix(lo, ".docx") + ".pdf"
			word := strings.TrimSuffix(lo, ".docx") + "-word.docx"
			pages := aireadytest.AddRenderedBreaks(t, lo, pdf, word)
			docx := domain.Format{Extension: "docx"}
			if aiready.PagedByItself(domain.EngineFile{Path: lo, Filename: "lo.docx", Format: docx}) {
				t.Error("the DOCX LibreOffice saved carries no pages of its own")
			}
			if !aiready.PagedByItself(domain.EngineFile{Path: word, Filename: "word.docx", Format: docx}) {
				t.Fatal("the DOCX with rendered breaks is to be converted")
			}
			hints := extract(t, word, "", `{}`)
			layout := extract(t, word, pdf, `{}`)
			if hints.chunks.Pages != pages || layout.chunks.Pages != pages {
				t.Fatalf("%d pages from hints, %d from the layout; the PDF has %d", hints.chunks.Pages, layout.chunks.Pages, pages)
			}
			if hints.md != layout.md || len(hints.chunks.Chunks) != len(layout.chunks.Chunks) {
				t.Fatalf("the same document read two ways differs: %d and %d chunks", len(hints.chunks.Chunks), len(layout.chunks.Chunks))
			}
			compared := 0
			for i, h := range hints.chunks.Chunks {
				l := layout.chunks.Chunks[i]
				if h.PageSource != "hints" || len(h.Pages) == 0 || len(h.Boxes) != 0 {
					t.Errorf("chunk %d: pages %v from %q with %d boxes", i, h.Pages, h.PageSource, len(h.Boxes))
				}
				if l.PageSource != "layout" || len(l.Pages) == 0 {
					continue // not found on the PDF
				}
				compared++
				if !slices.Equal(h.Pages, l.Pages) {
					t.Errorf("chunk %d (%.40q): pages %v from hints, %v on the PDF", i, h.Text, h.Pages, l.Pages)
				}
			}
			if compared*10 < len(hints.chunks.Chunks)*9 {
				t.Errorf("only %d of %d chunks found on the PDF", compared, len(hints.chunks.Chunks))
			}
			t.Logf("%d pages, %d chunks, %d compared", pages, len(hints.chunks.Chunks), compared)
		})
	}
}
