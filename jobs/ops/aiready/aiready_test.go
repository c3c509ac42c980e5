package aiready_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/aiready/aireadytest"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/enginetest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

var (
	pool   *pdfium.Pool
	engine *aiready.Engine
)

func TestMain(m *testing.M) {
	var err error
	pool, err = pdfium.New(pdfium.Config{Instances: 2, CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
	if err != nil {
		panic(err)
	}
	engine, err = aiready.New(aiready.Config{Pool: pool, OCRPage: TesseractOCR(pool)})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	pool.Close()
	os.Exit(code)
}

type result struct {
	md, txt  string
	chunks   aiready.ChunksFile
	out      *domain.EngineOutput
	progress []int
}

func runOn(t *testing.T, e *aiready.Engine, pdf []byte, opts string) (*result, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	r := &result{}
	o, err := domain.DecodeOptions(aiready.Specs(), aiready.Operation, json.RawMessage(opts))
	if err != nil {
		return nil, err
	}
	out, err := e.Run(context.Background(), domain.EngineInput{Operation: aiready.Operation, Options: o,
		Path: in, Filename: "in.pdf", WorkDir: work, Progress: func(p int) { r.progress = append(r.progress, p) }})
	if err != nil {
		return nil, err
	}
	r.out = out
	if len(out.Artifacts) != 3 {
		t.Fatalf("artifacts = %+v", out.Artifacts)
	}
	for _, a := range out.Artifacts {
		if filepath.Dir(a.Path) != work {
			t.Fatalf("artifact %s written outside the work directory", a.Path)
		}
		raw, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		switch a.Name {
		case "document.md":
			r.md = string(raw)
		case "document.txt":
			r.txt = string(raw)
		case "chunks.json":
			if err := json.Unmarshal(raw, &r.chunks); err != nil {
				t.Fatalf("chunks.json: %v", err)
			}
		default:
			t.Fatalf("unexpected artifact %s", a.Name)
		}
	}
	return r, nil
}

func run(t *testing.T, pdf []byte, opts string) *result {
	t.Helper()
	r, err := runOn(t, engine, pdf, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lineIndex is the index of the first markdown line equal to want (or, with a
// trailing "*", starting with it); -1 when none.
func lineIndex(md, want string) int {
	for i, l := range strings.Split(md, "\n") {
		if l == want || strings.HasSuffix(want, "*") && strings.HasPrefix(l, strings.TrimSuffix(want, "*")) {
			return i
		}
	}
	return -1
}

func mustLine(t *testing.T, md, want string) int {
	t.Helper()
	i := lineIndex(md, want)
	if i < 0 {
		t.Fatalf("no line %q in the markdown:\n%s", want, md)
	}
	return i
}

// structured is a two-page document: three heading levels, a bulleted list, a ruled
// 4×3 table, then a page of two columns, with running header, footer and page numbers.
func structured() []byte {
	d := &aireadytest.Doc{Header: "ACME Corporation Annual Report", Footer: "Confidential - internal use only", PageNumbers: true}
	p := d.NewPage()
	y := p.Heading(72, 100, 24, "Annual Report")
	y = p.Paragraph(72, y, 468, 11, aireadytest.Prose("intro", 1, 4))
	y = p.Heading(72, y, 18, "Operations Overview")
	y = p.Paragraph(72, y, 468, 11, aireadytest.Prose("ops", 1, 3))
	y = p.Heading(72, y, 14, "Regional Results")
	y = p.Bullets(90, y, 11, []string{"First bullet about harbors", "Second bullet about meadows", "Third bullet about lanterns"})
	y = p.RuledTable(72, y, []float64{110, 110, 110}, 11, [][]string{
		{"Region", "Revenue", "Growth"}, {"North", "120", "3%"}, {"South", "95", "1%"}, {"East", "143", "4%"}})
	p.Paragraph(72, y, 468, 11, aireadytest.Prose("after", 1, 2))

	p = d.NewPage()
	y = p.Heading(72, 100, 18, "Two Column Section")
	yl, yr := y, y
	for k := range 3 {
		yl = p.Paragraph(72, yl, 220, 10, aireadytest.Prose(fmt.Sprintf("left%d", k), 1, 4))
		yr = p.Paragraph(324, yr, 220, 10, aireadytest.Prose(fmt.Sprintf("right%d", k), 1, 4))
	}
	p.Paragraph(72, max(yl, yr)+10, 468, 10, aireadytest.Prose("closing", 1, 2))
	return d.Bytes()
}

func TestStructure(t *testing.T) {
	r := run(t, structured(), `{"chunk_size":2000}`)
	md := r.md
	h1 := mustLine(t, md, "# Annual Report")
	h2 := mustLine(t, md, "## Operations Overview")
	h3 := mustLine(t, md, "### Regional Results")
	if !(h1 < h2 && h2 < h3) {
		t.Fatalf("headings out of order: %d %d %d", h1, h2, h3)
	}
	// The list, each item on its own line, in order.
	b1 := mustLine(t, md, "- First bullet about harbors")
	b2 := mustLine(t, md, "- Second bullet about meadows")
	b3 := mustLine(t, md, "- Third bullet about lanterns")
	if !(h3 < b1 && b1+1 == b2 && b2+1 == b3) {
		t.Fatalf("list lines at %d %d %d after heading %d:\n%s", b1, b2, b3, h3, md)
	}
	// The table: header, separator, three rows of three cells.
	th := mustLine(t, md, "| Region | Revenue | Growth |")
	lines := strings.Split(md, "\n")
	want := []string{"| --- | --- | --- |", "| North | 120 | 3% |", "| South | 95 | 1% |", "| East | 143 | 4% |"}
	for i, w := range want {
		if th+1+i >= len(lines) || lines[th+1+i] != w {
			t.Fatalf("table line %d = %q, want %q:\n%s", i+1, lines[min(th+1+i, len(lines)-1)], w, md)
		}
	}
	// Paragraphs keep their sentences whole and in order.
	if !strings.Contains(md, aireadytest.Prose("intro", 1, 4)) || !strings.Contains(md, aireadytest.Prose("after", 1, 2)) {
		t.Fatalf("paragraph text not found whole:\n%s", md)
	}
	// Two columns: the left column's three paragraphs, then the right's.
	mustLine(t, md, "## Two Column Section")
	var pos []int
	for _, tag := range []string{"left0", "left1", "left2", "right0", "right1", "right2", "closing"} {
		want := aireadytest.Prose(tag, 1, 4)
		if tag == "closing" {
			want = aireadytest.Prose(tag, 1, 2)
		}
		i := strings.Index(md, want)
		if i < 0 {
			t.Fatalf("paragraph %s not found whole (columns mixed?):\n%s", tag, md)
		}
		pos = append(pos, i)
	}
	for i := 1; i < len(pos); i++ {
		if pos[i] < pos[i-1] {
			t.Fatalf("reading order broken at paragraph %d:\n%s", i, md)
		}
	}
	// No running header, footer or page numbers.
	for _, furniture := range []string{"ACME Corporation", "Confidential", "Page 1", "Page 2", "of 2"} {
		if strings.Contains(md, furniture) || strings.Contains(r.txt, furniture) {
			t.Fatalf("%q survived:\n%s", furniture, md)
		}
	}
	// The plain text has the same words without markdown.
	for _, s := range []string{"Annual Report\n", "• First bullet about harbors", "North\t120\t3%", aireadytest.Prose("left2", 1, 4)} {
		if !strings.Contains(r.txt, s) {
			t.Fatalf("text lacks %q:\n%s", s, r.txt)
		}
	}
	if strings.Contains(r.txt, "# ") || strings.Contains(r.txt, "| --- |") {
		t.Fatalf("text carries markdown:\n%s", r.txt)
	}
	if r.out.Units != 2 || r.chunks.Pages != 2 {
		t.Fatalf("units %d, chunks.pages %d; want 2", r.out.Units, r.chunks.Pages)
	}
	if len(r.progress) != 2 || r.progress[1] != 100 {
		t.Fatalf("progress = %v", r.progress)
	}
}

// An aligned table without rules is read as a table; text beside it stays prose.
func TestAlignedTable(t *testing.T) {
	d := &aireadytest.Doc{}
	p := d.NewPage()
	y := p.Heading(72, 100, 16, "Inventory")
	y = p.Paragraph(72, y, 468, 10, aireadytest.Prose("before", 1, 3))
	y = p.AlignedTable([]float64{72, 200, 300, 420}, y, 10, [][]string{
		{"Item", "Quantity", "Price", "Total"}, {"Bolts", "10", "0.20", "2.00"}, {"Nuts", "12", "0.10", "1.20"}})
	p.Paragraph(72, y, 468, 10, aireadytest.Prose("after", 1, 3))
	r := run(t, d.Bytes(), `{}`)
	th := mustLine(t, r.md, "| Item | Quantity | Price | Total |")
	lines := strings.Split(r.md, "\n")
	if lines[th+2] != "| Bolts | 10 | 0.20 | 2.00 |" || lines[th+3] != "| Nuts | 12 | 0.10 | 1.20 |" {
		t.Fatalf("table rows:\n%s", r.md)
	}
	if !strings.Contains(r.md, aireadytest.Prose("before", 1, 3)+"\n\n| Item") || !strings.Contains(r.md, aireadytest.Prose("after", 1, 3)) {
		t.Fatalf("prose around the table:\n%s", r.md)
	}
}

var tableRow = regexp.MustCompile(`^\|( [^|]*(\\\|[^|]*)* \|)+$`)

func TestChunks(t *testing.T) {
	d := &aireadytest.Doc{Footer: "Chunk test footer", PageNumbers: true}
	for ch := 1; ch <= 3; ch++ {
		p := d.NewPage()
		y := p.Heading(72, 100, 20, fmt.Sprintf("Chapter %d", ch))
		y = p.Paragraph(72, y, 468, 10, aireadytest.Prose(fmt.Sprintf("c%dintro", ch), 1, 4))
		for s := 1; s <= 2; s++ {
			y = p.Heading(72, y, 14, fmt.Sprintf("Part %d.%d", ch, s))
			y = p.Paragraph(72, y, 468, 10, aireadytest.Prose(fmt.Sprintf("c%dp%d", ch, s), 1, 9))
		}
		rows := [][]string{{"Key", "Value", "Note"}}
		for i := range 9 {
			rows = append(rows, []string{fmt.Sprintf("k%d-%d", ch, i), fmt.Sprintf("v%d", i*7), "steady"})
		}
		p.RuledTable(72, y, []float64{100, 100, 100}, 9, rows)
	}
	const size = 400
	r := run(t, d.Bytes(), fmt.Sprintf(`{"chunk_size":%d}`, size))
	cs := r.chunks.Chunks
	if r.chunks.ChunkSize != size || len(cs) < 10 {
		t.Fatalf("chunk_size %d, %d chunks", r.chunks.ChunkSize, len(cs))
	}
	var all strings.Builder
	for i, c := range cs {
		if c.Index != i || c.Characters != utf8.RuneCountInString(c.Text) || c.Characters > size || c.Characters == 0 {
			t.Fatalf("chunk %d: index %d, %d characters (%d counted), limit %d", i, c.Index, c.Characters, utf8.RuneCountInString(c.Text), size)
		}
		if len(c.Pages) != 1 {
			t.Fatalf("chunk %d on pages %v; every chunk here is on one page: %q", i, c.Pages, c.Text)
		}
		ch := c.Pages[0]
		// Every chunk is within its chapter, which is its page.
		if len(c.HeadingPath) == 0 || c.HeadingPath[0] != fmt.Sprintf("Chapter %d", ch) {
			t.Fatalf("chunk %d (page %d) heading path %q: %q", i, ch, c.HeadingPath, c.Text)
		}
		for _, tag := range []string{"c1", "c2", "c3", "k1-", "k2-", "k3-"} {
			if strings.Contains(c.Text, tag) && tag[1]-'0' != byte(ch) {
				t.Fatalf("chunk %d says it is on page %d but holds %s: %q", i, ch, tag, c.Text)
			}
		}
		for s := 1; s <= 2; s++ {
			if strings.Contains(c.Text, fmt.Sprintf("c%dp%d", ch, s)) {
				want := []string{fmt.Sprintf("Chapter %d", ch), fmt.Sprintf("Part %d.%d", ch, s)}
				if strings.Join(c.HeadingPath, "/") != strings.Join(want, "/") {
					t.Fatalf("chunk %d heading path %q, want %q", i, c.HeadingPath, want)
				}
			}
		}
		// Table rows are whole: every table line is a complete row of three cells.
		for _, l := range strings.Split(c.Text, "\n") {
			if strings.HasPrefix(l, "|") && (!tableRow.MatchString(l) || strings.Count(l, " |") != 3) {
				t.Fatalf("chunk %d cuts a table row: %q", i, l)
			}
			if strings.HasPrefix(l, "| k") && !strings.Contains(c.Text, "| Key | Value | Note |") {
				t.Fatalf("chunk %d continues a table without its header: %q", i, c.Text)
			}
		}
		// Headings start chunks.
		if j := strings.Index(c.Text, "## Part"); j > 0 && !strings.HasPrefix(c.Text, "# Chapter") {
			t.Fatalf("chunk %d has a heading inside: %q", i, c.Text)
		}
		all.WriteString(c.Text)
		all.WriteString("\n")
	}
	// Nothing is lost: every sentence and every row is in some chunk.
	for ch := 1; ch <= 3; ch++ {
		for s := 1; s <= 2; s++ {
			for k := 1; k <= 9; k++ {
				if !strings.Contains(all.String(), aireadytest.Sentence(fmt.Sprintf("c%dp%d", ch, s), k)) {
					t.Fatalf("sentence %d of part %d.%d is in no chunk", k, ch, s)
				}
			}
		}
		for i := range 9 {
			if !strings.Contains(all.String(), fmt.Sprintf("| k%d-%d | v%d | steady |", ch, i, i*7)) {
				t.Fatalf("row k%d-%d is in no chunk", ch, i)
			}
		}
	}
	if strings.Contains(all.String(), "footer") {
		t.Fatal("the running footer reached the chunks")
	}
}

// A scanned page (an image-only PDF) is recognised and its words come back.
func TestScannedPageFallsBackToOCR(t *testing.T) {
	d := &aireadytest.Doc{}
	p := d.NewPage()
	y := p.Heading(72, 120, 24, "Scanned Heading")
	y = p.Paragraph(72, y, 468, 14, "The quick brown fox jumps over the lazy dog while seven harbor lanterns glow.")
	y = p.Heading(72, y, 18, "Second Part")
	p.Bullets(90, y, 14, []string{"first point here", "second point here"})
	scan := scanned(t, d.Bytes())
	r := run(t, scan, `{}`)
	words := strings.Fields("The quick brown fox jumps over the lazy dog while seven harbor lanterns glow.")
	found := 0
	for _, w := range words {
		if strings.Contains(r.md, w) {
			found++
		}
	}
	if found < len(words)-1 {
		t.Fatalf("OCR found %d of %d words:\n%s", found, len(words), r.md)
	}
	// Sizes, and so heading levels, are estimated from the words' boxes; bullets are
	// recognised whatever glyph OCR makes of them.
	h1, h2 := lineIndex(r.md, "# Scanned Heading"), lineIndex(r.md, "## Second Part")
	b1, b2 := lineIndex(r.md, "- first point here"), lineIndex(r.md, "- second point here")
	if h1 < 0 || h2 < 0 || b1 < 0 || !(h1 < h2 && h2 < b1 && b1+1 == b2) {
		t.Fatalf("structure of the scan (%d %d %d %d):\n%s", h1, h2, b1, b2, r.md)
	}
	if r.out.Units != 1 || len(r.chunks.Chunks) == 0 || r.chunks.Chunks[0].Pages[0] != 1 {
		t.Fatalf("units %d, chunks %+v", r.out.Units, r.chunks.Chunks)
	}
}

// A document mixing text pages and a scanned page keeps page order.
func TestMixedTextAndScannedPages(t *testing.T) {
	var text aireadytest.Doc
	p := text.NewPage()
	p.Paragraph(72, 100, 468, 12, "Typed page one mentions the copper orchard.")
	p = text.NewPage()
	p.Paragraph(72, 100, 468, 16, "Scanned page two describes a marble willow.")
	p = text.NewPage()
	p.Paragraph(72, 100, 468, 12, "Typed page three closes with thunder.")
	mixed := withScannedPage(t, text.Bytes(), 3, 2)
	r := run(t, mixed, `{}`)
	i1, i2, i3 := strings.Index(r.md, "copper orchard"), strings.Index(r.md, "marble willow"), strings.Index(r.md, "closes with thunder")
	if i1 < 0 || i2 < 0 || i3 < 0 || !(i1 < i2 && i2 < i3) {
		t.Fatalf("pages out of order or lost (%d %d %d):\n%s", i1, i2, i3, r.md)
	}
	if r.out.Units != 3 || len(r.progress) != 3 || r.progress[2] != 100 {
		t.Fatalf("units %d, progress %v", r.out.Units, r.progress)
	}
}

func TestScannedPageWithoutOCRIsRefused(t *testing.T) {
	e, err := aiready.New(aiready.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	var d aireadytest.Doc
	d.NewPage().Paragraph(72, 100, 468, 14, "Nothing to read without recognition.")
	_, err = runOn(t, e, scanned(t, d.Bytes()), `{}`)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeUnsupportedInput || !strings.Contains(de.Message, "page 1") {
		t.Fatalf("err = %v, want unsupported_input naming page 1", err)
	}
	// A blank page needs no recognition.
	var blank aireadytest.Doc
	blank.NewPage()
	r, err := runOn(t, e, blank.Bytes(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(r.md) != "" || len(r.chunks.Chunks) != 0 || r.out.Units != 1 {
		t.Fatalf("blank page gave %q, %d chunks, %d units", r.md, len(r.chunks.Chunks), r.out.Units)
	}
}

func TestBadInputs(t *testing.T) {
	full := structured()
	cases := []struct {
		name, opts string
		pdf        []byte
		code       string
		param      string
	}{
		{"Truncated", `{}`, full[:len(full)/3], domain.CodeCorruptedFile, ""},
		{"NotAPDF", `{}`, []byte("hello, this is text"), domain.CodeCorruptedFile, ""},
		{"ChunkTooSmall", `{"chunk_size":10}`, full, domain.CodeInvalidRequest, "options.chunk_size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runOn(t, engine, c.pdf, c.opts)
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != c.code || de.Param != c.param {
				t.Fatalf("err = %#v, want %s %s", err, c.code, c.param)
			}
		})
	}
	small, err := aiready.New(aiready.Config{Pool: pool, MaxPages: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runOn(t, small, full, `{}`)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeUnsupportedInput {
		t.Fatalf("over MaxPages: %v", err)
	}
	_, err = runOn(t, engine, full, `{}`)
	if err != nil {
		t.Fatal(err)
	}
}

func TestDeadline(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, aireadytest.Report(40), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := engine.Run(ctx, domain.EngineInput{Operation: aiready.Operation, Options: engineOptions(t, aiready.Operation, `{}`), Path: in, WorkDir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the context's", err)
	}
}

func TestSpecsAndPreset(t *testing.T) {
	reg := domain.NewRegistry()
	if err := reg.AddOperations(aiready.Specs()...); err != nil {
		t.Fatal(err)
	}
	op := reg.Operation(aiready.Operation)
	if op == nil || !op.Hidden || op.Engine != "ai" || op.Price.Per != "page" {
		t.Fatalf("operation = %+v", op)
	}
	canon, err := op.ValidateOptions(json.RawMessage(`{}`))
	if err != nil || string(canon) != `{"chunk_size":2000,"contextualize":false,"cross_sections":false,"max_tokens":512,"merge_small":false,"overlap_tokens":0,"tokenizer":"cl100k_base"}` {
		t.Fatalf("canonical options %s, %v", canon, err)
	}
	if err := reg.AddPreset(aiready.Preset()); err != nil {
		t.Fatal(err)
	}
	p := reg.Preset("ai-ready")
	st := p.Pipeline(domain.Format{Extension: "pdf", MIMEType: "application/pdf"})
	if len(st) != 1 || st[0].Operation.Name != aiready.Operation {
		t.Fatalf("pipeline = %+v", st)
	}
	opts, err := st[0].StepOptions(json.RawMessage(`{"chunk_size":800}`))
	if err != nil || !strings.HasPrefix(string(opts), `{"chunk_size":800,`) {
		t.Fatalf("step options %s, %v", opts, err)
	}
}

// A document as LibreOffice writes it (from HTML, through its Writer filter): real
// fonts embedded as subsets, its own bullets and table borders.
func TestLibreOfficeDocument(t *testing.T) {
	mustTool(t, "soffice", "libreoffice-writer-nogui")
	dir := t.TempDir()
	html := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Review</title></head><body>
<h1>Quarterly Review</h1>
<p>This review covers the harbor project and its lanterns in some detail, with the results below.</p>
<h2>Highlights</h2>
<ul><li>Revenue grew in the north</li><li>Costs fell in the south</li><li>Staff doubled in the east</li></ul>
<h3>Figures by region</h3>
<table border="1"><tr><th>Region</th><th>Revenue</th><th>Growth</th></tr>
<tr><td>North</td><td>120</td><td>3%</td></tr><tr><td>South</td><td>95</td><td>1%</td></tr>
<tr><td>East</td><td>143</td><td>4%</td></tr></table>
<p>The figures above are unaudited.</p>
</body></html>`
	src := filepath.Join(dir, "review.html")
	if err := os.WriteFile(src, []byte(html), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("soffice", "-env:UserInstallation=file://"+filepath.Join(dir, "profile"), "--headless",
		"--infilter=HTML (StarWriter)", "--convert-to", "pdf", "--outdir", dir, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice: %v %s", err, b)
	}
	pdf, err := os.ReadFile(filepath.Join(dir, "review.pdf"))
	if err != nil {
		t.Fatalf("soffice wrote no PDF: %v", err)
	}
	r := run(t, pdf, `{}`)
	md := r.md
	h1 := mustLine(t, md, "# Quarterly Review")
	h2 := mustLine(t, md, "## Highlights")
	h3 := mustLine(t, md, "### Figures by region")
	b1 := mustLine(t, md, "- Revenue grew in the north")
	if mustLine(t, md, "- Costs fell in the south") != b1+1 || mustLine(t, md, "- Staff doubled in the east") != b1+2 {
		t.Fatalf("list:\n%s", md)
	}
	th := mustLine(t, md, "| Region | Revenue | Growth |")
	lines := strings.Split(md, "\n")
	if lines[th+2] != "| North | 120 | 3% |" || lines[th+4] != "| East | 143 | 4% |" {
		t.Fatalf("table:\n%s", md)
	}
	if !(h1 < h2 && h2 < b1 && b1 < h3 && h3 < th) {
		t.Fatalf("order:\n%s", md)
	}
	mustLine(t, md, "This review covers the harbor project and its lanterns in some detail, with the results below.")
}

// Nested and numbered lists: depth from the markers' indents, numbers kept.
func TestNestedAndNumberedLists(t *testing.T) {
	d := &aireadytest.Doc{}
	p := d.NewPage()
	y := p.Paragraph(72, 100, 468, 11, aireadytest.Prose("lead", 1, 2))
	for _, it := range []struct {
		x      float64
		marker string
		text   string
	}{{90, "•", "Fruit"}, {110, "–", "Apples and pears"}, {110, "–", "Plums"}, {90, "•", "Vegetables"}} {
		p.Text(it.x, y, aireadytest.Regular, 11, it.marker)
		p.Text(it.x+16, y, aireadytest.Regular, 11, it.text)
		y += 15
	}
	y += 10
	for i, s := range []string{"Open the valve", "Wait for the signal", "Close the valve"} {
		p.Text(90, y, aireadytest.Regular, 11, fmt.Sprintf("%d.", i+1))
		p.Text(108, y, aireadytest.Regular, 11, s)
		y += 15
	}
	p.Paragraph(72, y+10, 468, 11, aireadytest.Prose("tail", 1, 2))
	r := run(t, d.Bytes(), `{}`)
	want := "- Fruit\n    - Apples and pears\n    - Plums\n- Vegetables\n\n1. Open the valve\n2. Wait for the signal\n3. Close the valve\n\n"
	if !strings.Contains(r.md, want) {
		t.Fatalf("lists:\n%s\nwant:\n%s", r.md, want)
	}
}

// libreOfficePDF converts a document with LibreOffice in a profile of its own.
func libreOfficePDF(t *testing.T, name, content string, args ...string) []byte {
	t.Helper()
	mustTool(t, "soffice", "libreoffice-writer-nogui")
	dir := t.TempDir()
	src := filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("soffice", append(append([]string{"-env:UserInstallation=file://" + filepath.Join(dir, "profile"), "--headless"},
		args...), "--convert-to", "pdf", "--outdir", dir, src)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice: %v %s", err, b)
	}
	pdf, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(name, filepath.Ext(name))+".pdf"))
	if err != nil {
		t.Fatalf("soffice wrote no PDF: %v", err)
	}
	return pdf
}

// fieldReport is a flat OpenDocument text: headings of three levels, a section in two
// columns, a running header and a footer with a page-number field, over four pages.
func fieldReport() string {
	var body strings.Builder
	para := func(tag string, i, n int) {
		fmt.Fprintf(&body, `<text:p text:style-name="Body">%s</text:p>`, aireadytest.Prose(fmt.Sprintf("%s%d", tag, i), 1, n))
	}
	body.WriteString(`<text:h text:style-name="H1" text:outline-level="1">Field Report</text:h>`)
	for i := 1; i <= 3; i++ {
		para("intro", i, 6)
	}
	body.WriteString(`<text:h text:style-name="H2" text:outline-level="2">Observations</text:h><text:section text:style-name="Cols" text:name="Cols">`)
	for i := 1; i <= 6; i++ {
		para("col", i, 5)
	}
	body.WriteString(`</text:section><text:h text:style-name="H3" text:outline-level="3">Closing Notes</text:h>`)
	for i := 1; i <= 20; i++ {
		para("tail", i, 5)
	}
	return `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:styles>
<style:style style:name="Body" style:family="paragraph"><style:paragraph-properties fo:margin-top="0in" fo:margin-bottom="0.1in" fo:text-align="justify"/><style:text-properties style:font-name="Liberation Serif" fo:font-family="'Liberation Serif'" fo:font-size="11pt"/></style:style>
<style:style style:name="H1" style:family="paragraph"><style:paragraph-properties fo:margin-top="0.17in" fo:margin-bottom="0.08in"/><style:text-properties fo:font-family="'Liberation Sans'" fo:font-size="20pt" fo:font-weight="bold"/></style:style>
<style:style style:name="H2" style:family="paragraph"><style:paragraph-properties fo:margin-top="0.14in" fo:margin-bottom="0.08in"/><style:text-properties fo:font-family="'Liberation Sans'" fo:font-size="16pt" fo:font-weight="bold"/></style:style>
<style:style style:name="H3" style:family="paragraph"><style:paragraph-properties fo:margin-top="0.14in" fo:margin-bottom="0.08in"/><style:text-properties fo:font-family="'Liberation Sans'" fo:font-size="13pt" fo:font-weight="bold"/></style:style>
</office:styles>
<office:automatic-styles>
<style:style style:name="Cols" style:family="section"><style:section-properties><style:columns fo:column-count="2" fo:column-gap="0.4in"/></style:section-properties></style:style>
<style:page-layout style:name="pm1"><style:page-layout-properties fo:page-width="8.5in" fo:page-height="11in" fo:margin-top="0.6in" fo:margin-bottom="0.6in" fo:margin-left="1in" fo:margin-right="1in"/><style:header-style/><style:footer-style/></style:page-layout>
</office:automatic-styles>
<office:master-styles><style:master-page style:name="Standard" style:page-layout-name="pm1">
<style:header><text:p>Northwind Field Services</text:p></style:header>
<style:footer><text:p>Confidential draft, page <text:page-number text:select-page="current"/></text:p></style:footer>
</style:master-page></office:master-styles>
<office:body><office:text>` + body.String() + `</office:text></office:body></office:document>`
}

// A LibreOffice document with a running header, a footer carrying the page number,
// and a two-column section read column by column.
func TestLibreOfficeColumnsAndFooters(t *testing.T) {
	pdf := libreOfficePDF(t, "report.fodt", fieldReport())
	r := run(t, pdf, `{"chunk_size":1000}`)
	md := r.md
	if r.out.Units < 3 {
		t.Fatalf("%d pages; the document should run over three or more", r.out.Units)
	}
	h1, h2, h3 := mustLine(t, md, "# Field Report"), mustLine(t, md, "## Observations"), mustLine(t, md, "### Closing Notes")
	if !(h1 < h2 && h2 < h3) {
		t.Fatalf("headings out of order:\n%s", md)
	}
	prev := -1
	for _, tag := range []string{"intro1", "intro2", "intro3", "col1", "col2", "col3", "col4", "col5", "col6", "tail1", "tail10", "tail20"} {
		n := 6
		if strings.HasPrefix(tag, "col") || strings.HasPrefix(tag, "tail") {
			n = 5
		}
		i := lineIndex(md, aireadytest.Prose(tag, 1, n))
		if i <= prev {
			t.Fatalf("paragraph %s is not whole on its own line after the one before (line %d, previous %d):\n%s", tag, i, prev, md)
		}
		prev = i
	}
	if i := lineIndex(md, aireadytest.Prose("col6", 1, 5)); i > h3 {
		t.Fatalf("the columns' last paragraph comes after the heading below them:\n%s", md)
	}
	for _, furniture := range []string{"Northwind", "Confidential", "page 1", "page 2"} {
		if strings.Contains(md, furniture) {
			t.Fatalf("%q survived:\n%s", furniture, md)
		}
	}
}

// The ai-ready preset as the catalog declares it, with the convert and ocr operations:
// an office document is converted first, an image recognised into a searchable PDF, a
// PDF read as it is; chunk_size reaches the extraction.
func TestPresetWithConvertAndOCR(t *testing.T) {
	reg, err := catalog.Registry()
	if err != nil {
		t.Fatal(err)
	}
	p := reg.Preset("ai-ready")
	for _, c := range []struct {
		f     domain.Format
		steps string
	}{
		{domain.Format{Extension: "docx", MIMEType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}, "convert,extract"},
		{domain.Format{Extension: "png", MIMEType: "image/png"}, "ocr,extract"},
		{domain.Format{Extension: "pdf", MIMEType: "application/pdf"}, "extract"},
	} {
		var names []string
		for _, st := range p.Pipeline(c.f) {
			names = append(names, st.Name)
		}
		if strings.Join(names, ",") != c.steps || !p.Accepts(c.f) {
			t.Fatalf("%s: steps %v, accepted %v; want %s", c.f.Extension, names, p.Accepts(c.f), c.steps)
		}
	}
	canon, err := p.ValidateOptions(json.RawMessage(`{"chunk_size":750}`))
	if err != nil {
		t.Fatal(err)
	}
	steps := p.Pipeline(domain.Format{Extension: "docx"})
	for _, st := range steps {
		opts, err := st.StepOptions(canon)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"convert": `{"format":"pdf"}`, "extract": `{"chunk_size":750,"contextualize":false,"cross_sections":false,"max_tokens":512,"merge_small":false,"overlap_tokens":0,"tokenizer":"cl100k_base"}`}[st.Name]; string(opts) != want {
			t.Fatalf("step %s runs with %s, want %s", st.Name, opts, want)
		}
	}
}

func engineOptions(tb testing.TB, op, raw string) any {
	return enginetest.Options(tb, aiready.Specs(), op, raw)
}
