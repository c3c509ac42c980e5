package rest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
)

// sharedStringBomb is an XLSX whose one shared string is 300 MiB of "a" (about 300 KB
// compressed): LibreOffice would take minutes and gigabytes to load it.
func sharedStringBomb() []byte {
	return hostile.Zip(
		hostile.Part{Name: "[Content_Types].xml", Head: `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		hostile.Part{Name: "_rels/.rels", Head: `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		hostile.Part{Name: "xl/workbook.xml", Head: `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ` +
			`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		hostile.Part{Name: "xl/_rels/workbook.xml.rels", Head: `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		hostile.Part{Name: "xl/worksheets/sheet1.xml", Head: `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
			`<sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData></worksheet>`},
		hostile.Part{Name: "xl/sharedStrings.xml", Head: `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>`,
			Fill: "a", Size: 300 << 20, Tail: "</t></si></sst>"},
	)
}

// The spreadsheet with one 300 MiB shared string fails by its own fault, once: convert
// and ai-ready refuse it before LibreOffice or the structure reader loads it, never
// internal_error after three tries.
func TestSharedStringBombFailsOnce(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	bomb := sharedStringBomb()
	require.Less(t, len(bomb), 1<<20)
	file := b.readyFile(b.liveA, "bomb.xlsx", bomb)
	for _, body := range []map[string]any{
		{"file_id": file, "operation": "convert", "options": map[string]any{"format": "pdf"}},
		{"file_id": file, "operation": "convert", "options": map[string]any{"format": "md"}},
		{"file_id": file, "preset": "ai-ready"},
	} {
		r := b.createJob(b.liveA, body)
		require.Equal(t, 202, r.status, string(r.body))
		j := b.waitJob(b.liveA, r.json(t)["id"].(string))
		require.Equal(t, "failed", j["state"], "%v", body)
		e := j["error"].(map[string]any)
		require.Equal(t, domain.CodeUnsupportedInput, e["code"], "%v: %v", body, e)
		require.EqualValues(t, 1, j["attempts"], "%v", body)
		require.EqualValues(t, 0, j["credits_charged"])
	}
}
