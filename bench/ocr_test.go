package bench

import (
	"context"
	"fmt"
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
	"github.com/filemill/filemill/jobs/ops/pdfium"
	"golang.org/x/sync/errgroup"
)

// BenchmarkOCR recognises the same 20 page images at 300 dpi, side by side: the ocr
// engine on the pages as one scanned PDF (rendered by PDFium as workers do, language
// data loaded once per instance, pages in parallel on every core, single-threaded
// each), the engine on the page images as image jobs as many at once as cores, the
// tesseract CLI one process per
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
	// The same pages as one scanned PDF, rendered by the workers' PDFium pool.
	pdf := ocrtest.PDF(b, pngs, filepath.Join(dir, "scan.pdf"))
	pdfBytes, err := os.ReadFile(pdf)
	if err != nil {
		b.Fatal(err)
	}
	pool, err := pdfium.New(pdfium.Config{Instances: runtime.NumCPU(), CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Start(); err != nil {
		b.Fatal(err)
	}
	cfg := ocr.DefaultConfig()
	cfg.RenderBitmap = ocr.PDFiumRenderer(pool)
	e, err := ocr.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := e.Check(context.Background()); err != nil { // loads English once
		b.Fatal(err)
	}
	// measure runs one side and reports its pages/s and the CPU it cost this process.
	measure := func(b *testing.B, run func() error) {
		cpu0 := cpuTime(syscall.RUSAGE_SELF)
		start := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		cpu := cpuTime(syscall.RUSAGE_SELF) - cpu0
		b.ReportMetric(float64(pages)/el.Seconds(), "pages/s")
		b.ReportMetric(cpu.Seconds()/el.Seconds(), "cores-busy")
		b.ReportMetric(cpu.Seconds()/float64(pages), "cpu-s/page")
		b.ReportMetric(0, "ns/op")
	}
	recognise := func(path, name string, head []byte) ([]string, error) {
		work, err := os.MkdirTemp(dir, "work-")
		if err != nil {
			return nil, err
		}
		out, err := e.Run(context.Background(), domain.EngineInput{
			Operation: "ocr", Options: []byte(`{"outputs":["text"]}`), Path: path, Filename: name,
			Format: domain.Detect(head[:min(len(head), domain.DetectSniffBytes)]), WorkDir: work,
		})
		if err != nil {
			return nil, err
		}
		txt, err := os.ReadFile(out.Artifacts[0].Path)
		if err != nil {
			return nil, err
		}
		return strings.Split(string(txt), "\f"), nil
	}

	// The engine on the scan as one job: its pages rendered and recognised on every
	// core at once.
	var pdfText []string
	b.Run("engine-pdf", func(b *testing.B) {
		measure(b, func() (err error) {
			pdfText, err = recognise(pdf, "scan.pdf", pdfBytes)
			return err
		})
	})
	// The engine on the page images as image jobs, as many at once as cores: the same
	// files the CLI reads.
	var imageText []string
	b.Run(fmt.Sprintf("engine-images-x%d", runtime.NumCPU()), func(b *testing.B) {
		texts := make([]string, pages)
		measure(b, func() error {
			var next atomic.Int64
			g := errgroup.Group{}
			for range runtime.NumCPU() {
				g.Go(func() error {
					for i := int(next.Add(1)) - 1; i < pages; i = int(next.Add(1)) - 1 {
						head, err := os.ReadFile(pngs[i])
						if err != nil {
							return err
						}
						t, err := recognise(pngs[i], filepath.Base(pngs[i]), head)
						if err != nil {
							return err
						}
						texts[i] = t[0]
					}
					return nil
				})
			}
			return g.Wait()
		})
		imageText = texts
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
	var naiveText []string
	b.Run("cli-per-page-default-threads-x1", func(b *testing.B) {
		if os.Getenv("BENCH_OCR_NAIVE") == "0" {
			b.Skip("BENCH_OCR_NAIVE=0")
		}
		naiveText = cli(b, 1, nil)
	})

	// Same words: every side reads the same pixels with the same model. A side that
	// did not run (left out by -bench) has nothing to compare; one that ran must have
	// every page.
	sameWords := func(side string, engine []string) {
		if engine == nil || cliText == nil {
			return
		}
		if len(engine) < pages {
			b.Errorf("%s: %d pages of text, want %d", side, len(engine), pages)
			return
		}
		same, total := 0, 0
		for i := range pages {
			e, c := strings.Fields(engine[i]), strings.Fields(cliText[i])
			total += len(c)
			for j := range min(len(e), len(c)) {
				if e[j] == c[j] {
					same++
				}
			}
		}
		b.Logf("%s and the CLI agree on %d of %d words", side, same, total)
		if same != total {
			b.Errorf("%s: its words differ from the CLI's: %d of %d the same", side, same, total)
		}
	}
	sameWords("engine-pdf", pdfText)
	sameWords("engine-images", imageText)
	sameWords("cli-default-threads", naiveText)
}

// cpuTime is the user+system CPU time of this process (RUSAGE_SELF) or of its
// finished children (RUSAGE_CHILDREN): on a shared machine CPU seconds per page are
// steadier than wall time.
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
