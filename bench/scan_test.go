package bench

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/scan"
	"github.com/filemill/filemill/jobs/ops/scan/clamdtest"
)

// scanCorpus writes (once per machine) about 100 MB of mixed files: PDFs with
// compressed page content and object streams, JPEG and PNG pictures, zip archives of
// text and pictures, gzipped tar logs, word-processing documents, CSV text and
// binary blobs. It returns the paths and their total size.
func scanCorpus(b *testing.B) ([]string, int64) {
	dir := filepath.Join(os.TempDir(), "filemill-bench-scan-corpus-v2")
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err != nil {
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		writeCorpus(b, dir)
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	var total int64
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, e.Name()))
		total += info.Size()
	}
	return paths, total
}

func writeCorpus(b *testing.B, dir string) {
	r := rand.New(rand.NewSource(7))
	words := strings.Fields("the quick brown fox jumps over a lazy dog invoice total amount customer order " +
		"shipped pending report quarter revenue account balance filemill scan archive document page")
	text := func(n int) []byte {
		var buf bytes.Buffer
		for buf.Len() < n {
			buf.WriteString(words[r.Intn(len(words))])
			if r.Intn(12) == 0 {
				buf.WriteString(".\n")
			} else {
				buf.WriteByte(' ')
			}
		}
		return buf.Bytes()
	}
	picture := func(w, h int) *image.RGBA {
		im := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < len(im.Pix); i += 4 {
			x, y := (i/4)%w, (i/4)/w
			im.Pix[i], im.Pix[i+1], im.Pix[i+2], im.Pix[i+3] = uint8(x+r.Intn(40)), uint8(y+r.Intn(40)), uint8(x^y), 255
		}
		return im
	}
	jpegOf := func(im image.Image) []byte {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, im, &jpeg.Options{Quality: 92}); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	zipOf := func(files map[string][]byte) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for n, d := range files {
			w, err := zw.Create(n)
			if err != nil {
				b.Fatal(err)
			}
			w.Write(d)
		}
		if err := zw.Close(); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}
	for i := 0; i < 10; i++ { // ~2 MB PDFs: compressed pages, an object stream, pictures
		var objs []string
		objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>", "PAGES")
		var kids []string
		for p := 0; p < 20; p++ {
			content := zlibOf(b, []byte("BT /F1 10 Tf 72 720 Td ("+string(text(20000))+") Tj ET"))
			objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", len(objs)+2))
			kids = append(kids, fmt.Sprintf("%d 0 R", len(objs)))
			objs = append(objs, fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(content), content))
		}
		for k := 0; k < 3; k++ {
			pic := jpegOf(picture(1000, 800))
			objs = append(objs, fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width 1000 /Height 800 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n%s\nendstream", len(pic), pic))
		}
		objstm := zlibOf(b, []byte("100 0 << /Title (report) /Author (filemill) >>"))
		objs = append(objs, fmt.Sprintf("<< /Type /ObjStm /N 1 /First 6 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", len(objstm), objstm))
		objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))
		write(fmt.Sprintf("report-%02d.pdf", i), pdfBytes(objs))
	}
	for i := 0; i < 20; i++ {
		write(fmt.Sprintf("photo-%02d.jpg", i), jpegOf(picture(1400, 1000)))
	}
	for i := 0; i < 12; i++ {
		var buf bytes.Buffer
		if err := png.Encode(&buf, picture(700, 500)); err != nil {
			b.Fatal(err)
		}
		write(fmt.Sprintf("chart-%02d.png", i), buf.Bytes())
	}
	for i := 0; i < 12; i++ {
		files := map[string][]byte{}
		for k := 0; k < 8; k++ {
			files[fmt.Sprintf("docs/notes-%d.txt", k)] = text(300 << 10)
			files[fmt.Sprintf("img/pic-%d.jpg", k)] = jpegOf(picture(500, 400))
		}
		write(fmt.Sprintf("bundle-%02d.zip", i), zipOf(files))
	}
	for i := 0; i < 5; i++ {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		for k := 0; k < 6; k++ {
			d := text(2 << 20)
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("logs/app-%d.log", k), Mode: 0o644, Size: int64(len(d))})
			tw.Write(d)
		}
		tw.Close()
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(tb.Bytes())
		zw.Close()
		write(fmt.Sprintf("logs-%02d.tar.gz", i), gz.Bytes())
	}
	for i := 0; i < 12; i++ {
		doc := fmt.Sprintf(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:body></w:document>`, text(3<<20))
		write(fmt.Sprintf("letter-%02d.docx", i), zipOf(map[string][]byte{
			"[Content_Types].xml":    []byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`),
			"word/document.xml":      []byte(doc),
			"word/media/image1.jpeg": jpegOf(picture(800, 600)),
		}))
	}
	for i := 0; i < 10; i++ {
		var csv bytes.Buffer
		for csv.Len() < 1<<20 {
			fmt.Fprintf(&csv, "%d,%s,%d.%02d\n", r.Intn(1e6), words[r.Intn(len(words))], r.Intn(1000), r.Intn(100))
		}
		write(fmt.Sprintf("table-%02d.csv", i), csv.Bytes())
	}
	for i := 0; i < 6; i++ {
		blob := make([]byte, 2<<20)
		r.Read(blob)
		write(fmt.Sprintf("blob-%02d.bin", i), blob)
	}
}

// procCPU is another process's processor time so far, from /proc (Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // clock ticks of 1/100 s
}

func zlibOf(b *testing.B, data []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		b.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func pdfBytes(objs []string) []byte { return pdftest.Objects(objs...) }

// BenchmarkScan scans a 100 MB mixed corpus with the scan engine (clamd over INSTREAM
// plus the built-in rules) and with clamdscan alone against the same clamd (which
// reads the files itself), one file at a time and two at a time (clamdscan
// --multiscan), alternating passes, and reports MB/s and the ratio.
// Goal: ≥ 0.9× clamdscan's throughput.
func BenchmarkScan(b *testing.B) {
	if _, err := exec.LookPath("clamdscan"); err != nil {
		b.Fatalf("clamdscan is needed for the comparison: apt-get install -y --no-install-recommends clamdscan")
	}
	paths, total := scanCorpus(b)
	// Without clamd's cache of clean files both sides scan every byte of every pass.
	c := clamdtest.StartWith(b, clamdtest.Options{DisableCache: true})
	conf := c.ClientConfig(b)
	cfg := scan.DefaultConfig()
	cfg.ClamdAddress = c.Address
	cfg.MaxStreamBytes = 200 << 20
	eng, err := scan.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	passes := 3
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("at-once=%d", par), func(b *testing.B) {
			var engineTime, cliTime, engineCPU, cliCPU time.Duration
			var flagged atomic.Int64
			for p := 0; p < passes; p++ {
				t0, self0, clamd0 := time.Now(), selfCPU(), procCPU(b, c.PID())
				var wg sync.WaitGroup
				next := atomic.Int64{}
				for w := 0; w < par; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= len(paths) {
								return
							}
							v, _, err := eng.Scan(context.Background(), paths[i], filepath.Base(paths[i]), "")
							if err != nil {
								b.Errorf("scan %s: %v", paths[i], err)
								return
							}
							if v != scan.Clean {
								flagged.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				engineTime += time.Since(t0)
				engineCPU += selfCPU() - self0 + procCPU(b, c.PID()) - clamd0

				args := []string{"-c", conf, "--no-summary", "--infected"}
				if par > 1 {
					args = append(args, "--multiscan")
				}
				t0, clamd0 = time.Now(), procCPU(b, c.PID())
				cmd := exec.Command("clamdscan", append(args, paths...)...)
				out, err := cmd.CombinedOutput()
				cliTime += time.Since(t0)
				if err != nil {
					b.Fatalf("clamdscan: %v: %s", err, out)
				}
				cliCPU += procCPU(b, c.PID()) - clamd0 + cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			mb := float64(total) * float64(passes) / 1e6
			b.ReportMetric(mb/engineTime.Seconds(), "engine-MB/s")
			b.ReportMetric(mb/cliTime.Seconds(), "clamdscan-MB/s")
			b.ReportMetric(cliTime.Seconds()/engineTime.Seconds(), "x-clamdscan")
			// Processor time per MB (clamd's, plus this process's or clamdscan's): what
			// each side costs, whatever else the machine is doing.
			b.ReportMetric(engineCPU.Seconds()*1000/mb, "engine-cpu-ms/MB")
			b.ReportMetric(cliCPU.Seconds()*1000/mb, "clamdscan-cpu-ms/MB")
			b.ReportMetric(float64(len(paths)), "files")
			b.ReportMetric(float64(total)/1e6, "corpus-MB")
			b.ReportMetric(float64(flagged.Load()), "flagged")
			b.ReportMetric(0, "ns/op")
		})
	}
}
