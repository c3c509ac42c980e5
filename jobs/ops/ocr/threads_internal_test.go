package ocr

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
)

func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no thread count")
	return 0
}

// Recognition must stay on its own thread: tesseract's OpenMP regions would start a
// team of threads per call, and pages already run in parallel one core each.
func TestRecognitionStartsNoOpenMPTeam(t *testing.T) {
	page := ocrtest.WritePNG(t, t.TempDir(), "p.png", ocrtest.Page(t, ocrtest.Lines(ocrtest.Text(1, 40), 10)))
	a, err := newAPI(DefaultConfig().TessdataDir, "eng")
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	before := threads(t)
	res, err := a.page(context.Background(), pageImage{path: page}, 300, pageWant{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.text, ocrtest.Text(1, 40)[0]) {
		t.Fatalf("unexpected text %q", res.text)
	}
	if after := threads(t); after > before+2 {
		t.Fatalf("threads went from %d to %d: an OpenMP team was started", before, after)
	}
}
