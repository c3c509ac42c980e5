package officeprops_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filemill/filemill/jobs/ops/internal/officeprops"
)

var lim = officeprops.Limits{MaxEntries: 1000, MaxPartBytes: 1 << 20}

func zipFile(t *testing.T, ext string, parts ...string) string {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := 0; i+1 < len(parts); i += 2 {
		w, err := zw.Create(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(parts[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "in."+ext)
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCountPages: each format's page count comes from where its writer records it,
// and a container that records none, or is over the limits, has no count.
func TestCountPages(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, ext string
		parts     []string
		want      int
		ok        bool
	}{
		{"docx app.xml", "docx", []string{"docProps/app.xml", "<Properties><Application>Word</Application><Pages> 12 </Pages></Properties>"}, 12, true},
		{"docx without a count", "docx", []string{"docProps/app.xml", "<Properties><Words>3</Words></Properties>"}, 0, false},
		{"pptx slides", "pptx", []string{"ppt/slides/slide1.xml", "<p/>", "ppt/slides/slide2.xml", "<p/>", "ppt/slides/slideX.xml", "<p/>"}, 2, true},
		{"odt meta", "odt", []string{"meta.xml", `<office:document-meta xmlns:office="o" xmlns:meta="m"><office:meta><meta:document-statistic meta:page-count="7"/></office:meta></office:document-meta>`}, 7, true},
		{"odp pages", "odp", []string{"content.xml", `<office:document-content xmlns:office="o" xmlns:draw="d"><office:body><office:presentation><draw:page/><draw:page/><draw:page/></office:presentation></office:body></office:document-content>`}, 3, true},
		{"xlsx has no page count", "xlsx", []string{"docProps/app.xml", "<Properties><Pages>4</Pages></Properties>"}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, ok := officeprops.CountPages(ctx, zipFile(t, c.ext, c.parts...), c.ext, lim)
			if n != c.want || ok != c.ok {
				t.Fatalf("CountPages = %d, %v; want %d, %v", n, ok, c.want, c.ok)
			}
		})
	}

	p := filepath.Join(t.TempDir(), "broken.docx")
	if err := os.WriteFile(p, []byte("PK not a zip"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, ok := officeprops.CountPages(ctx, p, "docx", lim); ok {
		t.Fatalf("a damaged container counted %d pages", n)
	}
	var many []string
	for i := range 5 {
		many = append(many, "ppt/slides/slide"+strings.Repeat("1", i+1)+".xml", "<p/>")
	}
	if n, ok := officeprops.CountPages(ctx, zipFile(t, "pptx", many...), "pptx", officeprops.Limits{MaxEntries: 4, MaxPartBytes: 1 << 20}); ok {
		t.Fatalf("a container over the entry limit counted %d pages", n)
	}
	big := "<Properties><Pages>5</Pages>" + strings.Repeat("<x/>", 1000) + "</Properties>"
	if n, ok := officeprops.CountPages(ctx, zipFile(t, "docx", "docProps/app.xml", big), "docx", officeprops.Limits{MaxEntries: 10, MaxPartBytes: 100}); ok {
		t.Fatalf("a part over the byte limit was read: %d pages", n)
	}
}
