package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
	"github.com/filemill/filemill/jobs/ops/render"
)

// The PDF engines against the tools people would otherwise run, on the same files in
// the same run: each pdf.* operation against the pdfcpu CLI at the same version (one
// process per document, as a script would run it), pdf.render against pdftoppm, and
// pdf.compress against Ghostscript's /ebook preset. Engine figures are engine-level
// (no API or queue); the CLI figures include their process start, which is the cost a
// service running them would pay. BENCH_ITER sets the runs per side (default 10).
//
//	go test -run '^$' -bench 'BenchmarkPDF' -benchtime 1x ./bench/

var pdfIter = envInt("BENCH_ITER", 10)

var (
	pdfcpuOnce sync.Once
	pdfcpuBin  string
	pdfcpuErr  error
)

// pdfcpuCLI builds the pdfcpu command at the module's version, once per run.
func pdfcpuCLI(b *testing.B) string {
	pdfcpuOnce.Do(func() {
		dir, err := os.MkdirTemp("", "filemill-bench-pdfcpu-")
		if err != nil {
			pdfcpuErr = err
			return
		}
		cmd := exec.Command("go", "install", "github.com/pdfcpu/pdfcpu/cmd/pdfcpu@v0.15.0")
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			pdfcpuErr = fmt.Errorf("go install pdfcpu CLI: %v\n%s", err, out)
			return
		}
		pdfcpuBin = filepath.Join(dir, "pdfcpu")
	})
	if pdfcpuErr != nil {
		b.Fatalf("the pdfcpu CLI baseline cannot be built (needs the Go module proxy or a module cache holding pdfcpu v0.15.0 and its CLI's dependencies): %v", pdfcpuErr)
	}
	return pdfcpuBin
}

func mustTool(b *testing.B, name string) {
	if _, err := exec.LookPath(name); err != nil {
		b.Fatalf("%s is missing: apt-get install -y poppler-utils ghostscript", name)
	}
}

// side runs fn n times and returns runs per second.
func side(b *testing.B, n int, fn func(i int) error) float64 {
	b.Helper()
	start := time.Now()
	for i := range n {
		if err := fn(i); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

func runCLI(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v\n%s", name, args, err, out)
	}
	return nil
}

// engineRun runs one engine operation into a fresh work directory.
func engineRun(e domain.Engine, dir, op, opts, path string, inputs ...string) func(int) error {
	return func(i int) error {
		work := filepath.Join(dir, fmt.Sprintf("%s-%d-%d", op, time.Now().UnixNano(), i))
		if err := os.Mkdir(work, 0o700); err != nil {
			return err
		}
		defer os.RemoveAll(work)
		o, err := domain.DecodeOptions(pdf.Specs(), op, json.RawMessage(opts))
		if err != nil {
			return err
		}
		in := domain.EngineInput{Operation: op, Options: o, Path: path, Filename: "bench.pdf", WorkDir: work}
		for _, p := range inputs {
			in.Inputs = append(in.Inputs, domain.EngineFile{FileID: "file_x", Path: p})
		}
		_, err = e.Run(context.Background(), in)
		return err
	}
}

// BenchmarkPDFOperations: pdf.merge, pdf.pages (select and reorder; rotate), pdf.split
// and pdf.compress's pdfcpu part against the pdfcpu CLI on two 50-page text PDFs.
// Goal: ≥ 1.0× the CLI's throughput.
func BenchmarkPDFOperations(b *testing.B) {
	cli := pdfcpuCLI(b)
	dir := b.TempDir()
	a := pdftest.WriteFile(filepath.Join(dir, "a.pdf"), pdftest.Numbered("A ", 50))
	c := pdftest.WriteFile(filepath.Join(dir, "c.pdf"), pdftest.Numbered("C ", 50))
	e, err := pdf.New(pdf.Config{})
	if err != nil {
		b.Fatal(err)
	}
	out := func(name string, i int) string { return filepath.Join(dir, fmt.Sprintf("%s-%d.pdf", name, i)) }
	cases := []struct {
		name   string
		engine func(int) error
		cli    func(int) error
	}{
		{"merge", engineRun(e, dir, "pdf.merge", `{"file_ids":["file_x"]}`, a, c),
			func(i int) error { return runCLI(cli, "-c", "disable", "-q", "merge", out("m", i), a, c) }},
		{"pages-select", engineRun(e, dir, "pdf.pages", `{"pages":"40-50,1-10,25"}`, a),
			func(i int) error {
				return runCLI(cli, "-c", "disable", "-q", "collect", "-p", "40-50,1-10,25", a, out("p", i))
			}},
		{"pages-rotate", engineRun(e, dir, "pdf.pages", `{"rotate":[{"pages":"1-50","angle":90}]}`, a),
			func(i int) error { return runCLI(cli, "-c", "disable", "-q", "rotate", a, "90", out("r", i)) }},
		{"split-every-5", engineRun(e, dir, "pdf.split", `{"every":5}`, a),
			func(i int) error {
				d := filepath.Join(dir, fmt.Sprintf("s-%d", i))
				if err := os.Mkdir(d, 0o700); err != nil {
					return err
				}
				return runCLI(cli, "-c", "disable", "-q", "split", a, d, "5")
			}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				_ = tc.engine(-1) // warm-up: first-use costs are not throughput
				eng := side(b, pdfIter, tc.engine)
				cl := side(b, pdfIter, tc.cli)
				b.ReportMetric(eng, "engine-docs/s")
				b.ReportMetric(cl, "pdfcpu-cli-docs/s")
				b.ReportMetric(eng/cl, "x-cli")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// BenchmarkPDFCompress: pdf.compress (medium) against Ghostscript's /ebook and the
// pdfcpu CLI's optimize on a ~13 MB image-heavy PDF (4 pages, 2400×3200 photos at
// about 320 dpi). Goal: a ratio at least as good as gs's in no more than its time.
func BenchmarkPDFCompress(b *testing.B) {
	mustTool(b, "gs")
	cli := pdfcpuCLI(b)
	dir := b.TempDir()
	in := pdftest.WriteFile(filepath.Join(dir, "photos.pdf"), pdftest.ImageHeavy(4, 2400))
	st, _ := os.Stat(in)
	e, err := pdf.New(pdf.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var ratio float64
	eng := func(i int) error {
		work := filepath.Join(dir, fmt.Sprintf("w%d-%d", i, time.Now().UnixNano()))
		if err := os.Mkdir(work, 0o700); err != nil {
			return err
		}
		out, err := e.Run(context.Background(), domain.EngineInput{Operation: "pdf.compress", Options: engineOptions(b, pdf.Specs(), "pdf.compress", `{"level":"medium"}`),
			Path: in, Filename: "photos.pdf", WorkDir: work})
		if err != nil {
			return err
		}
		o, _ := os.Stat(out.Artifacts[0].Path)
		ratio = float64(o.Size()) / float64(st.Size())
		return os.RemoveAll(work)
	}
	size := func(p string) float64 {
		o, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		return float64(o.Size()) / float64(st.Size())
	}
	gsOut, cliOut := filepath.Join(dir, "gs.pdf"), filepath.Join(dir, "cli.pdf")
	gs := func(int) error {
		return runCLI("gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite", "-dPDFSETTINGS=/ebook", "-sOutputFile="+gsOut, in)
	}
	opt := func(int) error {
		_ = os.Remove(cliOut) // the CLI refuses to overwrite
		return runCLI(cli, "-c", "disable", "-q", "optimize", in, cliOut)
	}
	n := max(1, pdfIter/3)
	for range b.N {
		_ = eng(-1)
		ours := side(b, n, eng)
		theirs := side(b, n, gs)
		optimize := side(b, n, opt)
		b.ReportMetric(1/ours, "engine-s/doc")
		b.ReportMetric(ratio, "engine-ratio")
		b.ReportMetric(1/theirs, "gs-ebook-s/doc")
		b.ReportMetric(size(gsOut), "gs-ebook-ratio")
		b.ReportMetric(1/optimize, "pdfcpu-optimize-s/doc")
		b.ReportMetric(size(cliOut), "pdfcpu-optimize-ratio")
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkPDFRender: pdf.render against pdftoppm, both writing PNG at the same DPI,
// on a 50-page PDF (generated text pages, or BENCH_RENDER_PDF), pages per second. The
// engine spreads pages over its PDFium instances (GOMAXPROCS); pdftoppm uses one core.
// pdftoppm writing raw PPM (no encoding at all) is reported as its rendering ceiling.
// Goal: ≥ 1.0× pdftoppm's pages/s.
func BenchmarkPDFRender(b *testing.B) {
	mustTool(b, "pdftoppm")
	dir := b.TempDir()
	in := pdftest.WriteFile(filepath.Join(dir, "doc.pdf"), pdftest.Numbered("", 50))
	if p := os.Getenv("BENCH_RENDER_PDF"); p != "" {
		in = p
	}
	e, err := render.New(render.Config{PDFium: pdfium.Config{CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-bench-wazero")}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := e.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	pages := 50
	for _, dpi := range []int{72, 150} {
		for _, format := range []string{"png", "jpeg"} {
			b.Run(fmt.Sprintf("%ddpi-%s", dpi, format), func(b *testing.B) {
				opts := fmt.Sprintf(`{"pages":"1-%d","dpi":%d,"format":"%s"}`, pages, dpi, format)
				popplerFmt := "-" + format
				n := max(1, pdfIter/3)
				for range b.N {
					_ = engineRun(e, dir, "pdf.render", opts, in)(-1)
					eng := side(b, n, engineRun(e, dir, "pdf.render", opts, in))
					pop := side(b, n, func(i int) error {
						return runCLI("pdftoppm", "-q", "-r", fmt.Sprint(dpi), "-l", fmt.Sprint(pages), popplerFmt, in, filepath.Join(dir, fmt.Sprintf("pp%d", i)))
					})
					ppm := side(b, n, func(i int) error {
						return runCLI("pdftoppm", "-q", "-r", fmt.Sprint(dpi), "-l", fmt.Sprint(pages), in, filepath.Join(dir, fmt.Sprintf("ppm%d", i)))
					})
					b.ReportMetric(eng*float64(pages), "engine-pages/s")
					b.ReportMetric(pop*float64(pages), "pdftoppm-pages/s")
					b.ReportMetric(ppm*float64(pages), "pdftoppm-ppm-pages/s")
					b.ReportMetric(eng/pop, "x-pdftoppm")
					b.ReportMetric(0, "ns/op")
				}
			})
		}
	}
}
