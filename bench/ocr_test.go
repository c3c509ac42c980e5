package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
// engine on the pages as one scanned PDF (read by PDFium as workers do: each page's
// image as stored, language data loaded once per instance, pages in parallel on every
// core, single-threaded each), the engine on the page images as image jobs as many at once as cores, the
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
	// The same pages as one scanned PDF, read by the workers' PDFium pool.
	pdf := ocrtest.PDF(b, pngs, filepath.Join(dir, "scan.pdf"))
	pdfBytes, err := os.ReadFile(pdf)
	if err != nil {
		b.Fatal(err)
	}
	e := workerOCR(b)
	// measure runs one side and reports its pages/s and the CPU it cost this process
	// and its recognition helpers.
	measure := func(b *testing.B, run func() error) {
		cpu0 := treeCPUTime()
		start := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		cpu := treeCPUTime() - cpu0
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
			Operation: "ocr", Options: engineOptions(b, ocr.Specs(), "ocr", `{"outputs":["text"]}`), Path: path, Filename: name,
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

	// The engine on the scan as one job: its pages read and recognised on every
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

// treeCPUTime is the CPU time of this process and every process under it, alive or
// reaped: the engine's recognition helpers included.
func treeCPUTime() time.Duration {
	return time.Duration(TreeCPU(ReadProcs(), os.Getpid()) * float64(time.Second))
}

// BenchmarkSearchablePDF makes the searchable PDF of one 20-page scan (Letter pages of
// text drawn at 200 dpi, stored as gray JPEG images of quality 75 filling the pages,
// as phone apps and office scanners make them) two ways, side by side: the ocr engine
// as workers run it (PDFium hands each scanned page's image over as stored, pages in
// parallel on every core, one core each) and Debian's ocrmypdf with --output-type pdf
// --optimize 0 --jobs 2. The sides alternate for BENCH_OCR_ROUNDS rounds (default 3);
// it reports each side's median pages/s and CPU-seconds per page, the output sizes
// against the input, and how many of ocrmypdf's words the engine's text layer has, as
// pdftotext reads both. Goals: ≥ 1.5× ocrmypdf's pages/s, ≥ 99 % the same words, an
// output no larger than ocrmypdf's. BENCH_OCR_PAGES sets the page count.
//
//	go test -run '^$' -bench BenchmarkSearchablePDF -benchtime 1x ./bench/
func BenchmarkSearchablePDF(b *testing.B) {
	if _, err := exec.LookPath("ocrmypdf"); err != nil {
		b.Fatal("ocrmypdf is missing: apt-get install -y --no-install-recommends ocrmypdf")
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		b.Fatal("pdftotext is missing: apt-get install -y --no-install-recommends poppler-utils")
	}
	pages := envInt("BENCH_OCR_PAGES", 20)
	rounds := envInt("BENCH_OCR_ROUNDS", 3)
	dir := b.TempDir()
	text := make([][]string, pages)
	for i := range text {
		text[i] = ocrtest.Lines(ocrtest.Text(100+i, 350), 10)
	}
	scan := filepath.Join(dir, "scan.pdf")
	if err := os.WriteFile(scan, ocrtest.ScannedPDF(b, text, 200), 0o600); err != nil {
		b.Fatal(err)
	}
	head, err := os.ReadFile(scan)
	if err != nil {
		b.Fatal(err)
	}
	inSize := len(head)

	e := workerOCR(b)

	type side struct {
		name       string
		run        func(round int) (string, error) // the searchable PDF's path
		cpu        func() time.Duration
		rates, cps []float64
		out        string
	}
	engine := &side{name: "engine", cpu: treeCPUTime,
		run: func(round int) (string, error) {
			work := filepath.Join(dir, fmt.Sprintf("engine-%d", round))
			if err := os.Mkdir(work, 0o700); err != nil {
				return "", err
			}
			out, err := e.Run(context.Background(), domain.EngineInput{
				Operation: "ocr", Options: engineOptions(b, ocr.Specs(), "ocr", `{"outputs":["pdf"]}`), Path: scan, Filename: "scan.pdf",
				Format: domain.Detect(head[:domain.DetectSniffBytes]), ByteSize: int64(inSize), WorkDir: work,
			})
			if err != nil {
				return "", err
			}
			return out.Artifacts[0].Path, nil
		}}
	ocrmypdf := &side{name: "ocrmypdf", cpu: func() time.Duration { return cpuTime(syscall.RUSAGE_CHILDREN) },
		run: func(round int) (string, error) {
			out := filepath.Join(dir, fmt.Sprintf("ocrmypdf-%d.pdf", round))
			cmd := exec.Command("ocrmypdf", "-q", "--output-type", "pdf", "--optimize", "0", "--jobs", "2", scan, out)
			if msg, err := cmd.CombinedOutput(); err != nil {
				return "", fmt.Errorf("ocrmypdf: %v: %s", err, msg)
			}
			return out, nil
		}}
	sides := []*side{engine, ocrmypdf}
	for r := range rounds {
		for _, s := range sides {
			cpu0 := s.cpu()
			start := time.Now()
			out, err := s.run(r)
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			el := time.Since(start)
			s.rates = append(s.rates, float64(pages)/el.Seconds())
			s.cps = append(s.cps, (s.cpu()-cpu0).Seconds()/float64(pages))
			s.out = out
		}
	}
	size := func(path string) int {
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return int(st.Size())
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, s := range sides {
		b.Logf("%s: pages/s per round %.3f, CPU-s/page %.2f, %d bytes", s.name, s.rates, s.cps, size(s.out))
		b.ReportMetric(median(s.rates), s.name+"-pages/s")
		b.ReportMetric(median(s.cps), s.name+"-cpu-s/page")
		b.ReportMetric(float64(size(s.out))/float64(inSize), s.name+"-size-x-input")
	}
	b.ReportMetric(median(engine.rates)/median(ocrmypdf.rates), "x-ocrmypdf")
	b.ReportMetric(float64(size(engine.out))/float64(size(ocrmypdf.out)), "size-x-ocrmypdf")

	// The same words: ocrmypdf's text layer against the engine's, page by page.
	same, total := 0, 0
	for p := 1; p <= pages; p++ {
		theirs := strings.Fields(pdfText(b, ocrmypdf.out, p))
		ours := strings.Fields(pdfText(b, engine.out, p))
		same += ocrtest.CommonWords(theirs, ours)
		total += max(len(theirs), len(ours))
	}
	agree := float64(same) / float64(max(1, total))
	b.ReportMetric(100*agree, "same-words-%")
	b.ReportMetric(0, "ns/op")
	if agree < 0.99 {
		b.Errorf("the text layers agree on %d of %d words", same, total)
	}
}

// pdfText is pdftotext's text of one page.
func pdfText(b *testing.B, pdf string, page int) string {
	out, err := exec.Command("pdftotext", "-f", fmt.Sprint(page), "-l", fmt.Sprint(page), pdf, "-").Output()
	if err != nil {
		b.Fatalf("pdftotext %s: %v", pdf, err)
	}
	return string(out)
}

// workerOCR is the ocr engine as workers run it: PDFium on every core reads a scanned
// page's image as stored and renders other pages; English is loaded once, as a
// worker has it by the time jobs arrive. Pages are recognised in helper processes,
// or with BENCH_OCR_IN_PROCESS=1 in this one (as a worker without a memory cgroup).
func workerOCR(b *testing.B) *ocr.Engine {
	pool, err := pdfium.New(pdfium.Config{Instances: runtime.NumCPU(), CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pool.Close() })
	if err := pool.Start(); err != nil {
		b.Fatal(err)
	}
	cfg := ocr.DefaultConfig()
	cfg.RenderBitmap, cfg.PageContent = ocr.PDFiumRenderer(pool), ocr.PDFiumContent(pool)
	cfg.InProcess = os.Getenv("BENCH_OCR_IN_PROCESS") == "1"
	e, err := ocr.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	b.Logf("pages recognised in helper processes: %v", e.Isolated())
	if err := e.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	return e
}
