package aiready_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

const ocrDPI = 300

// TesseractOCR recognises a page with the tesseract CLI, as the OCR engine would: the
// page rendered at 300 dpi in gray, words with their boxes from tesseract's TSV.
// The words go through PageFromWords, as the OCR engine's words would.
func TesseractOCR(pool *pdfium.Pool) aiready.OCRFunc {
	return func(ctx context.Context, pdfPath string, page int, _ int64) (*pdfium.PageText, error) {
		dir, err := os.MkdirTemp("", "filemill-ocr-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		img := filepath.Join(dir, "page.png")
		r, err := pool.RenderPage(ctx, pdfPath, page, pdfium.ImageOptions{
			RenderOptions: pdfium.RenderOptions{DPI: ocrDPI, Gray: true}, Format: "png"}, img)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, "tesseract", img, "stdout", "--psm", "3", "tsv")
		cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("tesseract (apt-get install tesseract-ocr tesseract-ocr-eng): %v: %s", err, stderr.String())
		}
		return parseTSV(out, page, r.Width, r.Height)
	}
}

func parseTSV(tsv []byte, page, w, h int) (*pdfium.PageText, error) {
	rd := csv.NewReader(bytes.NewReader(tsv))
	rd.Comma = '\t'
	rd.LazyQuotes = true
	rd.FieldsPerRecord = -1
	if _, err := rd.Read(); err != nil { // header
		return nil, fmt.Errorf("tesseract TSV: %w", err)
	}
	var words []aiready.Word
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("tesseract TSV: %w", err)
		}
		if len(rec) < 12 {
			continue
		}
		n := make([]int, 10)
		for i := range n {
			n[i], _ = strconv.Atoi(rec[i])
		}
		conf, _ := strconv.ParseFloat(rec[10], 64)
		if n[0] == 5 && conf >= 0 {
			words = append(words, aiready.Word{Text: rec[11], BBox: [4]int{n[6], n[7], n[6] + n[8], n[7] + n[9]}})
		}
	}
	return aiready.PageFromWords(page, w, h, ocrDPI, words), nil
}

func mustTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is missing: apt-get install -y %s", name, pkg)
	}
}

// scanned turns a one-page PDF into a scan of it: the page rendered at 300 dpi and
// wrapped as an image-only PDF by img2pdf.
func scanned(t *testing.T, pdf []byte) []byte {
	t.Helper()
	mustTool(t, "img2pdf", "img2pdf")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.pdf")
	if err := os.WriteFile(src, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "scan.jpg")
	if _, err := pool.RenderPage(context.Background(), src, 1, pdfium.ImageOptions{
		RenderOptions: pdfium.RenderOptions{DPI: 300, Gray: true}, Format: "jpeg", Quality: 90}, img); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "scan.pdf")
	if b, err := exec.Command("img2pdf", "--imgsize", "300dpi", "-o", out, img).CombinedOutput(); err != nil {
		t.Fatalf("img2pdf: %v %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// withScannedPage replaces page n of the count pages of pdf by a scan of it (qpdf assembles the pages).
func withScannedPage(t *testing.T, pdf []byte, count, n int) []byte {
	t.Helper()
	mustTool(t, "qpdf", "qpdf")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.pdf")
	if err := os.WriteFile(src, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "one.pdf")
	if b, err := exec.Command("qpdf", "--empty", "--pages", src, strconv.Itoa(n), "--", one).CombinedOutput(); err != nil {
		t.Fatalf("qpdf: %v %s", err, b)
	}
	raw, err := os.ReadFile(one)
	if err != nil {
		t.Fatal(err)
	}
	scan := filepath.Join(dir, "scan.pdf")
	if err := os.WriteFile(scan, scanned(t, raw), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "mixed.pdf")
	args := []string{"--empty", "--pages"}
	for p := 1; p <= count; p++ {
		if p == n {
			args = append(args, scan, "1")
		} else {
			args = append(args, src, strconv.Itoa(p))
		}
	}
	args = append(args, "--", out)
	if b, err := exec.Command("qpdf", args...).CombinedOutput(); err != nil {
		t.Fatalf("qpdf: %v %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
