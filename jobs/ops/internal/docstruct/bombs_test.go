package docstruct

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

const (
	xlsxWorkbook = `<workbook xmlns:r="r"><sheets><sheet name="S" r:id="rId1"/></sheets></workbook>`
	xlsxRels     = `<Relationships><Relationship Id="rId1" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Target="sharedStrings.xml"/></Relationships>`
)

// workbookWith is an XLSX of one sheet (and a shared strings part) around a bomb part.
func workbookWith(bomb hostile.Part, sheet string) []byte {
	parts := []hostile.Part{
		{Name: "xl/workbook.xml", Head: xlsxWorkbook},
		{Name: "xl/_rels/workbook.xml.rels", Head: xlsxRels},
	}
	for _, p := range []hostile.Part{{Name: "xl/worksheets/sheet1.xml", Head: sheet}, {Name: "xl/sharedStrings.xml", Head: "<sst><si><t>a</t></si></sst>"}} {
		if p.Name != bomb.Name {
			parts = append(parts, p)
		}
	}
	return hostile.Zip(append(parts, bomb)...)
}

// TestReadRefusesBombs: the structure reader of ai-ready and convert (docx, xlsx, odf)
// refuses documents built to exhaust it with ErrTooLarge, within the memory its limits
// allow and seconds. Not parallel: the figures are this test's.
func TestReadRefusesBombs(t *testing.T) {
	const sheet = `<worksheet><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData></worksheet>`
	lim := zipparts.DefaultLimits()
	for _, c := range []struct {
		name, reader string
		data         func() []byte
		maxPeak      int64
	}{
		// One shared string of 300 MiB (300 KB compressed): refused on its declared size.
		{"HugeSharedString", ReaderXLSX, func() []byte {
			return workbookWith(hostile.Part{Name: "xl/sharedStrings.xml", Head: "<sst><si><t>", Fill: "a", Size: 300 << 20, Tail: "</t></si></sst>"}, sheet)
		}, 8 << 20},
		// The same string under a header that claims 1 KB.
		{"HugeSharedStringLyingSize", ReaderXLSX, func() []byte {
			return workbookWith(hostile.Part{Name: "xl/sharedStrings.xml", Head: "<sst><si><t>", Fill: "a", Size: 300 << 20, Tail: "</t></si></sst>", DeclaredSize: 1 << 10}, sheet)
		}, 8 << 20},
		// 3,000,000 cells in 48 MiB of sheet XML (about 100 KB compressed).
		{"ManyCells", ReaderXLSX, func() []byte {
			return workbookWith(hostile.Part{Name: "xl/worksheets/sheet1.xml", Head: `<worksheet><sheetData><row r="1">`,
				Fill: `<c><v>1</v></c>`, Size: 3_000_000 * 15, Tail: "</row></sheetData></worksheet>"}, "")
		}, 1 << 30},
		// 7,000,000 shared strings in 113 MiB, under the part limit (300 KB compressed).
		{"ManySharedStrings", ReaderXLSX, func() []byte {
			return workbookWith(hostile.Part{Name: "xl/sharedStrings.xml", Head: "<sst>", Fill: "<si><t>a</t></si>", Size: 7_000_000 * 17, Tail: "</sst>"}, sheet)
		}, 1 << 30},
		// A document part of 1 GiB of one paragraph's text.
		{"DocxRatio", ReaderDOCX, func() []byte {
			return hostile.Zip(hostile.Part{Name: "word/document.xml", Head: `<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>`, Fill: "a", Size: 1 << 30, Tail: "</w:t></w:r></w:p></w:body></w:document>"})
		}, 8 << 20},
		{"ManyEntries", ReaderDOCX, func() []byte { return hostile.ManyEntries(200_000) }, 8 << 20},
		// 13,000,000 empty ODF paragraphs in 112 MiB.
		{"ManyODFElements", ReaderODT, func() []byte {
			return hostile.Zip(hostile.Part{Name: "mimetype", Head: "application/vnd.oasis.opendocument.text"},
				hostile.Part{Name: "content.xml", Head: `<office:document-content xmlns:office="o" xmlns:text="t"><office:body><office:text>`,
					Fill: "<text:p/>", Size: 13_000_000 * 9, Tail: "</office:text></office:body></office:document-content>"})
		}, 1 << 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := c.data()
			path := filepath.Join(t.TempDir(), "bomb")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var err error
			m := hostile.Run(func() { _, err = Read(path, c.reader, lim) })
			if !errors.Is(err, zipparts.ErrTooLarge) && !errors.Is(err, ErrUnreadable) {
				t.Fatalf("read: %v", err)
			}
			m.Within(t, c.name+" ("+hostile.Size(len(data))+"): "+err.Error(), 2*time.Minute, c.maxPeak)
		})
	}
}
