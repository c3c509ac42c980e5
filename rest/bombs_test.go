package rest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
)

// TestJSONBombsRefused sends request bodies built to make a JSON decoder work hard, each
// up to the 1 MiB body cap: each is refused with its code and a short answer, within the
// time and memory stated (the client's copy of the body included). Not parallel: the
// figures are this test's.
func TestJSONBombsRefused(t *testing.T) {
	b := setup(t)
	const half = 500_000
	for _, c := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"DeepArrays", "/v1/uploads", `{"filename":"a","byte_size":1,"validation":{"formats":` + strings.Repeat("[", half) + strings.Repeat("]", half) + `}}`,
			400, domain.CodeInvalidRequest},
		{"DeepObjectsInOptions", "/v1/jobs", `{"file_id":"file_01ARZ3NDEKTSV4RRFFQ69G5FAV","operation":"inspect","options":` +
			strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + "}", 400, domain.CodeInvalidRequest},
		{"LongUnknownKey", "/v1/uploads", `{"filename":"a","byte_size":1,"` + strings.Repeat("k", 1_000_000) + `":1}`, 400, domain.CodeInvalidRequest},
		{"HugeNumber", "/v1/uploads", `{"filename":"a","byte_size":1` + strings.Repeat("7", 1_000_000) + "}", 400, domain.CodeInvalidRequest},
		{"HugeExponent", "/v1/uploads", `{"filename":"a","byte_size":1e999999999}`, 400, domain.CodeInvalidRequest},
		{"HugeFraction", "/v1/downloads", `{"expires_in":0.` + strings.Repeat("0", 1_000_000) + "1}", 400, domain.CodeInvalidRequest},
		{"EscapedNULs", "/v1/uploads", `{"byte_size":1,"filename":"` + strings.Repeat(`\u0000`, 170_000) + `"}`, 400, domain.CodeInvalidRequest},
		{"ManyArrayItems", "/v1/uploads", `{"filename":"a","byte_size":1,"validation":{"formats":[` + strings.Repeat(`"pdf",`, 170_000) + `"pdf"]}}`,
			400, domain.CodeInvalidRequest},
		{"OverTheCap", "/v1/uploads", `{"filename":"a","byte_size":1}` + strings.Repeat(" ", 1<<20), 413, domain.CodePayloadTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "/v1/downloads" {
				path = "/v1/files/file_01ARZ3NDEKTSV4RRFFQ69G5FAV/download-url"
			}
			var r response
			m := hostile.Run(func() { r = b.do(req{method: "POST", path: path, key: b.liveA, idem: idem(), body: c.body}) })
			require.Equal(t, c.status, r.status, "%.300s", r.body)
			require.Equal(t, c.code, r.errorCode(t))
			// The refusal quotes what it must, never the bomb itself.
			require.Less(t, len(r.body), 1<<10, "%.300s", r.body)
			m.Within(t, c.name+" ("+hostile.Size(len(c.body))+"): "+r.json(t)["error"].(map[string]any)["message"].(string),
				5*time.Second, 64<<20)
		})
	}
}

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
