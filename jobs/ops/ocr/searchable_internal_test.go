package ocr

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
)

// A readable PDF is the base of its searchable PDF (its pages kept); an encrypted one
// is not (its pages are made anew).
func TestReadBase(t *testing.T) {
	dir := t.TempDir()
	scan := filepath.Join(dir, "scan.pdf")
	require := func(ok bool, msg string) {
		t.Helper()
		if !ok {
			t.Fatal(msg)
		}
	}
	require(os.WriteFile(scan, ocrtest.ScannedPDF(t, [][]string{{"one"}, {"two"}}, 150), 0o600) == nil, "write")
	pc := readBase(scan, 2)
	require(pc != nil && pc.PageCount == 2, "the scan is read with its two pages")
	require(readBase(scan, 3) == nil, "a page count other than the platform's is refused")
	locked := filepath.Join(dir, "locked.pdf")
	out, err := exec.Command("qpdf", "--encrypt", "", "owner", "256", "--", scan, locked).CombinedOutput()
	require(err == nil, string(out))
	require(readBase(locked, 2) == nil, "an encrypted PDF is rebuilt")
}

// Text layer placement on rotated pages: the unit square onto the displayed crop box.
func TestDisplayedArea(t *testing.T) {
	for rot, want := range map[int][2][2]float64{
		// displayed top-left and bottom-right corners (unit (0,1) and (1,0)) in page space
		0:   {{10, 800}, {610, 20}},
		90:  {{10, 20}, {610, 800}},
		180: {{610, 20}, {10, 800}},
		270: {{610, 800}, {10, 20}},
	} {
		m := displayedAreaOf(10, 20, 610, 800, rot)
		at := func(s, u float64) [2]float64 { return [2]float64{m[0]*s + m[2]*u + m[4], m[1]*s + m[3]*u + m[5]} }
		if got := [2][2]float64{at(0, 1), at(1, 0)}; got != want {
			t.Errorf("rotate %d: corners %v, want %v", rot, got, want)
		}
	}
}
