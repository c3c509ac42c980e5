package bench

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/ocr"
	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
)

// BenchmarkOCR recognises the same 20 page images at 300 dpi, side by side: the ocr
// engine on one 20-page job (language data loaded once per instance, pages in
// parallel on every core, single-threaded each), the tesseract CLI one process per
// page with OMP_THREAD_LIMIT=1 and as many processes at once as cores, and the CLI
// one process per page one after another with its default OpenMP threading. It
// reports pages/s, CPU seconds per page, and checks the words are the same.
// BENCH_OCR_PAGES sets the count; BENCH_OCR_NAIVE=0 leaves out the slow default-threads run.
//
//	go test -run '^$' -bench BenchmarkOCR -benchtime 1x ./bench/
func BenchmarkOCR(b *testing.B) {
	if _, err := exec.LookPath("tesseract"); err != nil {
		b.Fatal("tesseract is missing: apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng libtesseract-dev")
	}
	pages := envInt("BENCH_OCR_PAGES", 20)
	dir := b.TempDir()
	var pngs []string
	for i := range pages {
		img := ocrtest.Page(b, ocrtest.Lines(ocrtest.Text(i, 350), 10))
		pngs = append(pngs, ocrtest.WritePNG(b, dir, fmt.Sprintf("page-%02d.png", i+1), img))
	}
	// A PDF of the images stands for the scan; the "renderer" decodes the very same
	// page images into memory, where PDFium leaves the pages it renders, so both sides
	// recognise identical pixels and both pay for a PNG decode.
	pdf := ocrtest.PDF(b, pngs, filepath.Join(dir, "scan.pdf"))
	pdfBytes, err := os.ReadFile(pdf)
	if err != nil {
		b.Fatal(err)
	}
	decodePage := func(_ context.Context, _ string, page, _ int) (*ocr.Bitmap, error) {
		f, err := os.Open(pngs[page-1])
		if err != nil {
			return nil, err
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			return nil, err
		}
		g, ok := img.(*image.Gray)
		if !ok {
			return nil, fmt.Errorf("page %d is not gray", page)
		}
		return &ocr.Bitmap{Width: g.Rect.Dx(), Height: g.Rect.Dy(), Stride: g.Stride, Gray: true, Pix: g.Pix}, nil
	}

	var engineText []string
	b.Run("engine", func(b *testing.B) {
		cfg := ocr.DefaultConfig()
		cfg.RenderBitmap = decodePage
		e, err := ocr.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		if err := e.Check(context.Background()); err != nil { // loads English once
			b.Fatal(err)
		}
		work := filepath.Join(dir, "engine")
		if err := os.Mkdir(work, 0o700); err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime(syscall.RUSAGE_SELF)
		start := time.Now()
		out, err := e.Run(context.Background(), domain.EngineInput{
			Operation: "ocr", Options: []byte(`{"outputs":["text"]}`), Path: pdf, Filename: "scan.pdf",
			Format: domain.Detect(pdfBytes[:min(len(pdfBytes), domain.DetectSniffBytes)]), WorkDir: work,
		})
		el := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		txt, err := os.ReadFile(out.Artifacts[0].Path)
		if err != nil {
			b.Fatal(err)
		}
		engineText = strings.Split(string(txt), "\f")
		b.ReportMetric(float64(pages)/el.Seconds(), "pages/s")
		cpu := cpuTime(syscall.RUSAGE_SELF) - cpu0
		b.ReportMetric(cpu.Seconds()/el.Seconds(), "cores-busy")
		b.ReportMetric(cpu.Seconds()/float64(pages), "cpu-s/page")
		b.ReportMetric(0, "ns/op")
	})

	cli := func(b *testing.B, parallel int, env []string) []string {
		texts := make([]string, pages)
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		cpu0 := cpuTime(syscall.RUSAGE_CHILDREN)
		start := time.Now()
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= pages {
						return
					}
					cmd := exec.Command("tesseract", pngs[i], "stdout")
					cmd.Env = append(os.Environ(), env...)
					cmd.Stderr = io.Discard
					out, err := cmd.Output()
					if err != nil {
						failed.Store(err)
						return
					}
					texts[i] = string(out)
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		cpu := cpuTime(syscall.RUSAGE_CHILDREN) - cpu0
		b.ReportMetric(float64(pages)/el.Seconds(), "pages/s")
		b.ReportMetric(cpu.Seconds()/el.Seconds(), "cores-busy")
		b.ReportMetric(cpu.Seconds()/float64(pages), "cpu-s/page")
		b.ReportMetric(0, "ns/op")
		return texts
	}
	var cliText []string
	b.Run(fmt.Sprintf("cli-per-page-omp1-x%d", runtime.NumCPU()), func(b *testing.B) {
		cliText = cli(b, runtime.NumCPU(), []string{"OMP_THREAD_LIMIT=1"})
	})
	b.Run("cli-per-page-default-threads-x1", func(b *testing.B) {
		if os.Getenv("BENCH_OCR_NAIVE") == "0" {
			b.Skip("BENCH_OCR_NAIVE=0")
		}
		cli(b, 1, nil)
	})

	// Same words: the engine and the CLI read the same pixels with the same model.
	if len(engineText) >= pages && len(cliText) == pages {
		same, total := 0, 0
		for i := range pages {
			e, c := strings.Fields(engineText[i]), strings.Fields(cliText[i])
			total += len(c)
			for j := range min(len(e), len(c)) {
				if e[j] == c[j] {
					same++
				}
			}
		}
		b.Logf("engine and CLI agree on %d of %d words", same, total)
		if same != total {
			b.Errorf("the engine's words differ from the CLI's: %d of %d the same", same, total)
		}
	}
}

// cpuTime is the user+system CPU time of this process (RUSAGE_SELF) or of its
// finished children (RUSAGE_CHILDREN): on a shared machine CPU seconds per page are
// steadier than wall time.
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
