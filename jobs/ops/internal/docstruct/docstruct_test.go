package docstruct

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

func writeZip(t *testing.T, parts map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range parts {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "doc.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		v    float64
		code string
		want string
	}{
		{1200, "General", "1200"},
		{0.1 + 0.2, "General", "0.3"},
		{1.0 / 3, "", "0.3333333333"},
		{0.2, "0.00", "0.20"},
		{1234567.891, "#,##0.00", "1,234,567.89"},
		{0.035, "0%", "4%"},
		{0.035, "0.00%", "3.50%"},
		{-5, "#,##0;(#,##0)", "(5)"},
		{-5, "0.0", "-5.0"},
		{0, "0.00;-0.00;\"zero\"", "zero"},
		{12.5, `[$€-407] #,##0.00`, "€ 12.50"},
		{12.5, `"$"#,##0.00`, "$12.50"},
		{45292, "m/d/yyyy", "1/1/2024"},
		{45292, "yyyy-mm-dd", "2024-01-01"},
		{45292.75, "yyyy-mm-dd hh:mm", "2024-01-01 18:00"},
		{45292.75, "h:mm AM/PM", "6:00 PM"},
		{45292, "d-mmm-yy", "1-Jan-24"},
		{123456, "0.00E+00", "1.23E+05"},
	} {
		if got := FormatValue(c.v, c.code, false); got != c.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", c.v, c.code, got, c.want)
		}
	}
}

func TestZipLimits(t *testing.T) {
	big := writeZip(t, map[string]string{"word/document.xml": `<w:document xmlns:w="w"><w:body>` + strings.Repeat("<w:p/>", 200_000) + `</w:body></w:document>`})
	_, err := ReadDOCX(big, zipparts.Limits{MaxEntries: 10, MaxPartBytes: 100_000, MaxTotalBytes: 1 << 20})
	if !errors.Is(err, zipparts.ErrTooLarge) {
		t.Fatalf("a part over the limit: %v", err)
	}
	parts := map[string]string{"word/document.xml": `<w:document xmlns:w="w"><w:body/></w:document>`}
	for i := range 20 {
		parts[strings.Repeat("x", i+1)] = "x"
	}
	_, err = ReadDOCX(writeZip(t, parts), zipparts.Limits{MaxEntries: 10, MaxPartBytes: 1 << 20, MaxTotalBytes: 1 << 20})
	if !errors.Is(err, zipparts.ErrTooLarge) {
		t.Fatalf("too many entries: %v", err)
	}
	if _, err := Read(writeZip(t, map[string]string{"x": "y"}), ReaderDOCX, zipparts.DefaultLimits()); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("no document part: %v", err)
	}
}

const wNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"`

// A Word document as Word writes one: heading styles, a numbered list with a nested
// bullet, a footnote, an image with a description, a table with a repeated header row,
// a merged cell across and down, and deleted text.
func TestDOCX(t *testing.T) {
	p := func(style, num, text string) string {
		ppr := ""
		if style != "" || num != "" {
			ppr = "<w:pPr>"
			if style != "" {
				ppr += `<w:pStyle w:val="` + style + `"/>`
			}
			ppr += num + "</w:pPr>"
		}
		return "<w:p>" + ppr + `<w:r><w:t xml:space="preserve">` + text + "</w:t></w:r></w:p>"
	}
	num := func(id, lvl string) string {
		return `<w:numPr><w:ilvl w:val="` + lvl + `"/><w:numId w:val="` + id + `"/></w:numPr>`
	}
	tc := func(props, text string) string {
		return "<w:tc><w:tcPr>" + props + "</w:tcPr>" + p("", "", text) + "</w:tc>"
	}
	body := p("Title", "", "Annual Summary") + p("Heading2", "", "Findings") +
		p("", num("5", "0"), "First finding") + p("", num("5", "1"), "Nested bullet") + p("", num("5", "0"), "Second finding") +
		`<w:p><w:r><w:t>Tides rose</w:t></w:r><w:r><w:footnoteReference w:id="2"/></w:r><w:r><w:t xml:space="preserve"> sharply.</w:t></w:r>` +
		`<w:del><w:r><w:delText>gone</w:delText></w:r></w:del></w:p>` +
		`<w:p><w:r><w:drawing><wp:inline><wp:docPr id="1" name="Picture 1" descr="A chart of tides"/></wp:inline></w:drawing></w:r></w:p>` +
		`<w:tbl><w:tblPr/><w:tblGrid/>` +
		`<w:tr><w:trPr><w:tblHeader/></w:trPr>` + tc(`<w:gridSpan w:val="2"/>`, "Sales") + tc("", "Region") + `</w:tr>` +
		`<w:tr>` + tc("", "2023") + tc("", "2024") + tc(`<w:vMerge w:val="restart"/>`, "North") + `</w:tr>` +
		`<w:tr>` + tc("", "120") + tc("", "135") + tc(`<w:vMerge/>`, "") + `</w:tr></w:tbl>`
	styles := `<w:styles ` + wNS + `><w:style w:styleId="Title"><w:name w:val="Title"/></w:style>` +
		`<w:style w:styleId="Heading2"><w:name w:val="heading 2"/></w:style></w:styles>`
	numbering := `<w:numbering ` + wNS + `><w:abstractNum w:abstractNumId="0">` +
		`<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>` +
		`<w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/></w:lvl></w:abstractNum>` +
		`<w:num w:numId="5"><w:abstractNumId w:val="0"/></w:num></w:numbering>`
	notes := `<w:footnotes ` + wNS + `><w:footnote w:type="separator" w:id="0"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>` +
		`<w:footnote w:id="2"><w:p><w:r><w:t>Measured at noon.</w:t></w:r></w:p></w:footnote></w:footnotes>`
	path := writeZip(t, map[string]string{
		"word/document.xml":  `<w:document ` + wNS + `><w:body>` + body + `<w:sectPr/></w:body></w:document>`,
		"word/styles.xml":    styles,
		"word/numbering.xml": numbering,
		"word/footnotes.xml": notes,
	})
	d, err := ReadDOCX(path, zipparts.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := "# Annual Summary\n\n## Findings\n\n1. First finding\n    - Nested bullet\n2. Second finding\n\n" +
		"Tides rose[^1] sharply.\n\n[Image: A chart of tides]\n\n" +
		"| Sales | Sales | Region |\n| --- | --- | --- |\n| 2023 | 2024 | North |\n| 120 | 135 | North |\n\n[^1]: Measured at noon.\n"
	if got := d.Markdown(); got != want {
		t.Fatalf("markdown:\n%s\nwant:\n%s", got, want)
	}
}

const ssNS = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

// A workbook: shared and inline strings, number formats, a merged header cell, an
// empty row, a hidden sheet, and a cell at the sheet's far corner that costs nothing.
func TestXLSX(t *testing.T) {
	sheet := `<worksheet ` + ssNS + `><sheetData>` +
		`<row r="1"><c r="B1" t="s"><v>0</v></c><c r="D1" t="inlineStr"><is><t>Share</t></is></c></row>` +
		`<row r="2"><c r="B2" t="s"><v>1</v></c><c r="C2" s="1"><v>1234.5</v></c><c r="D2" s="2"><v>0.25</v></c></row>` +
		`<row r="4"><c r="B4" t="s"><v>2</v></c><c r="C4" s="3"><v>45292</v></c><c r="D4" t="b"><v>1</v></c></row>` +
		`<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>far</t></is></c></row>` +
		`</sheetData><mergeCells count="1"><mergeCell ref="B1:C1"/></mergeCells></worksheet>`
	path := writeZip(t, map[string]string{
		"xl/workbook.xml": `<workbook ` + ssNS + `><sheets><sheet name="Results" sheetId="1" r:id="rId1"/>` +
			`<sheet name="Secret" sheetId="2" state="hidden" r:id="rId2"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Target="worksheets/sheet2.xml"/>` +
			`<Relationship Id="rId3" Target="sharedStrings.xml"/><Relationship Id="rId4" Target="styles.xml"/></Relationships>`,
		"xl/sharedStrings.xml": `<sst ` + ssNS + `><si><t>Item</t></si><si><r><t>Bo</t></r><r><t>lts</t></r></si><si><t>Nuts</t></si></sst>`,
		"xl/styles.xml": `<styleSheet ` + ssNS + `><numFmts><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/></numFmts>` +
			`<cellXfs><xf numFmtId="0"/><xf numFmtId="4"/><xf numFmtId="9"/><xf numFmtId="164"/></cellXfs></styleSheet>`,
		"xl/worksheets/sheet1.xml": sheet,
		"xl/worksheets/sheet2.xml": `<worksheet ` + ssNS + `><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>hidden</t></is></c></row></sheetData></worksheet>`,
	})
	d, err := ReadXLSX(path, zipparts.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := "# Results\n\n| Item | Item | Share |  |\n| --- | --- | --- | --- |\n| Bolts | 1,234.50 | 25% |  |\n" +
		"| Nuts | 2024-01-01 | TRUE |  |\n|  |  |  | far |\n"
	if got := d.Markdown(); got != want {
		t.Fatalf("markdown:\n%s\nwant:\n%s", got, want)
	}
}

func TestHTML(t *testing.T) {
	d, err := ReadHTML(strings.NewReader(`<html><head><title>x</title><script>var a</script></head><body>
<h2>Plan</h2><p>First <b>bold</b> words<br>go on.</p>
<ol start="3"><li>Three<ul><li>inner <em>item</em></li></ul></li><li><p>Four</p></li></ol>
<table><thead><tr><th rowspan="2">Name</th><th colspan="2">Score</th></tr><tr><th>A</th><th>B</th></tr></thead>
<tbody><tr><td>Ann</td><td>1</td><td>2</td></tr></tbody></table>
<figure><img src="x.png" alt="A heron"><figcaption>Figure 1</figcaption></figure>
<pre>code  line
  two</pre></body></html>`))
	if err != nil {
		t.Fatal(err)
	}
	want := "## Plan\n\nFirst bold words go on.\n\n3. Three\n    - inner item\n4. Four\n\n" +
		"| Name | Score A | Score B |\n| --- | --- | --- |\n| Ann | 1 | 2 |\n\n[Image: A heron]\n\nFigure 1\n\n```\ncode  line\n  two\n```\n"
	if got := d.Markdown(); got != want {
		t.Fatalf("markdown:\n%s\nwant:\n%s", got, want)
	}
}

func TestMarkdownAndCSV(t *testing.T) {
	d := ReadMarkdown([]byte("# Top\n\nText with a note[^n] and ![a fox](f.png) here.\n\n1. one\n   - sub\n2. two\n\n" +
		"| A | B |\n|---|---|\n| 1 | 2 |\n\n```go\nx := 1\n```\n\n[^n]: The note.\n"))
	want := "# Top\n\nText with a note[^1] and here.\n\n[Image: a fox]\n\n1. one\n    - sub\n2. two\n\n| A | B |\n| --- | --- |\n| 1 | 2 |\n\n```\nx := 1\n```\n\n[^1]: The note.\n"
	if got := d.Markdown(); got != want {
		t.Fatalf("markdown:\n%s\nwant:\n%s", got, want)
	}
	c, err := ReadCSV([]byte("\xef\xbb\xbfname;qty\nbolts;10\n\nnuts;\"1;2\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Markdown(); got != "| name | qty |\n| --- | --- |\n| bolts | 10 |\n| nuts | 1;2 |\n" {
		t.Fatalf("csv:\n%s", got)
	}
}

func TestLocate(t *testing.T) {
	d := &Document{Blocks: []*Block{
		{Kind: Heading, Level: 1, Text: "Harbor report"},
		{Kind: Paragraph, Text: "The tide rose at noon and fell at dusk."},
		{Kind: Table, Rows: [][]string{{"Port", "High"}, {"Dover", "6"}}},
	}}
	var words []Word
	add := func(page int, y float64, text string) {
		x := 72.0
		for _, w := range strings.Fields(text) {
			words = append(words, Word{Text: w, Box: Box{Page: page, X0: x, Y0: y, X1: x + 30, Y1: y + 10}})
			x += 35
		}
	}
	add(1, 700, "Page footer 1")
	add(1, 72, "Harbor report")
	add(1, 100, "The tide rose at noon")
	add(2, 72, "and fell at dusk.")
	add(2, 100, "Port High")
	add(2, 112, "Dover 6")
	Locate(d, words, 2)
	if got := Pages(d.Blocks[1].Boxes); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("paragraph on pages %v (%+v)", got, d.Blocks[1].Boxes)
	}
	if b := d.Blocks[0].Boxes; len(b) != 1 || b[0].Y0 != 72 {
		t.Fatalf("heading boxes %+v", b)
	}
	if rb := d.Blocks[2].RowBoxes; len(rb) != 2 || rb[1][0].Page != 2 || rb[1][0].Y0 != 112 {
		t.Fatalf("row boxes %+v", rb)
	}
}
