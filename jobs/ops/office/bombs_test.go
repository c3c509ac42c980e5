package office_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/office"
)

// TestCountPagesRefusesBombs: the page count the API reads from an office document at
// completion gives up on containers built to exhaust it (ok false: its jobs reserve an
// estimate), within a few MiB and seconds, whatever they claim. Not parallel: the
// figures are this test's.
func TestCountPagesRefusesBombs(t *testing.T) {
	const appXML = "docProps/app.xml"
	for _, c := range []struct {
		name, ext string
		data      func() []byte
		maxPeak   int64
	}{
		// 200,000 empty entries (18 MB): archive/zip would allocate for each one.
		{"ManyEntries", "docx", func() []byte { return hostile.ManyEntries(200_000) }, 8 << 20},
		// 256 MiB of XML before the count, stated as it is (about 256 KB compressed).
		{"HugeCountPart", "docx", func() []byte {
			return hostile.Zip(hostile.Part{Name: appXML, Head: "<Properties>", Fill: " ", Size: 256 << 20, Tail: "<Pages>3</Pages></Properties>"})
		}, 8 << 20},
		// The same part, its header claiming 100 bytes.
		{"HugeCountPartLyingSize", "docx", func() []byte {
			return hostile.Zip(hostile.Part{Name: appXML, Head: "<Properties>", Fill: " ", Size: 256 << 20, Tail: "<Pages>3</Pages></Properties>", DeclaredSize: 100})
		}, 8 << 20},
		// 4 MiB of slides in one content.xml: more pages than any presentation has.
		{"ManySlides", "odp", func() []byte {
			return hostile.Zip(hostile.Part{Name: "content.xml", Head: `<r xmlns:draw="d">`, Fill: "<draw:page/>", Size: 4<<20 - 64, Tail: "</r>"})
		}, 24 << 20},
		{"AbsurdPageCount", "docx", func() []byte {
			return hostile.Zip(hostile.Part{Name: appXML, Head: "<Properties><Pages>", Fill: "9", Size: 30, Tail: "</Pages></Properties>"})
		}, 4 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bomb."+c.ext)
			data := c.data()
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var n int
			var ok bool
			m := hostile.Run(func() { n, ok = office.CountPages(path, domain.Format{Extension: c.ext}) })
			if ok || n != 0 {
				t.Fatalf("counted %d pages", n)
			}
			m.Within(t, c.name+" ("+hostile.Size(len(data))+")", 10*time.Second, c.maxPeak)
		})
	}
}
