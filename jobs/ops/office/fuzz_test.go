package office_test

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
)

var countFormats = []string{"docx", "pptx", "odt", "odp"}

// zipOf is a zip of named parts, stored as they are.
func zipOf(parts ...string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := 0; i+1 < len(parts); i += 2 {
		w, _ := zw.Create(parts[i])
		w.Write([]byte(parts[i+1]))
	}
	zw.Close()
	return b.Bytes()
}

// FuzzOfficeCountPages: the page count the API reads at completion from an office
// document is unknown (ok false) or a count from 1 to office.MaxCountPages; no
// container, however damaged, panics it or makes it allocate beyond the bound on the
// XML it reads.
func FuzzOfficeCountPages(f *testing.F) {
	f.Add(uint8(0), officetest.DOCX(f, officetest.TextPages(3, 2)))
	f.Add(uint8(1), officetest.PPTX(f, []string{"a", "b"}))
	f.Add(uint8(0), zipOf("docProps/app.xml", "<Properties><Pages>3000000000</Pages></Properties>"))
	f.Add(uint8(0), zipOf("docProps/app.xml", "<Properties><Pages> 12 </Pages></Properties>"))
	f.Add(uint8(0), zipOf("docProps/app.xml", "<Properties><Pages><b>1</b></Pages></Properties>"))
	f.Add(uint8(2), zipOf("mimetype", "application/vnd.oasis.opendocument.text",
		"meta.xml", `<office:document-meta xmlns:meta="m"><meta:document-statistic meta:page-count="7"/></office:document-meta>`))
	f.Add(uint8(2), zipOf("meta.xml", `<document-statistic page-count="99999999999999999999"/>`))
	f.Add(uint8(3), zipOf("content.xml", `<r xmlns:draw="d"><draw:page/><draw:page/><page/></r>`))
	f.Add(uint8(3), zipOf("content.xml", "<r>"+strings.Repeat("<draw:page/>", 200_000)+"</r>"))
	f.Add(uint8(1), zipOf("ppt/slides/slide1.xml", "", "ppt/slides/slide1.xml", "", "ppt/slides/slide02.xml", "", "ppt/slides/slideX.xml", ""))
	f.Add(uint8(0), []byte("PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		ext := countFormats[int(which)%len(countFormats)]
		path := filepath.Join(dir, "in."+ext)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var n int
		var ok bool
		alloc := hostile.Allocated(func() { n, ok = office.CountPages(path, domain.Format{Extension: ext}) })
		if limit := uint64(hostile.Slack + 64*len(data) + 32<<20); alloc > limit {
			t.Fatalf("counting the pages of a %s of %d bytes allocated %d bytes", ext, len(data), alloc)
		}
		if ok && (n < 1 || n > office.MaxCountPages) {
			t.Fatalf("a %s of %d pages", ext, n)
		}
		if !ok && n != 0 {
			t.Fatalf("unknown, yet %d pages", n)
		}
	})
}
