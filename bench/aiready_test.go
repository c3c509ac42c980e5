package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/aiready/aireadytest"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

// BenchmarkAIReady: ai.extract (markdown, text and chunks) on a generated 200-page
// report (headings of three levels, lists, ruled and aligned tables, two-column pages,
// running headers, footers and page numbers) with a PDFium pool of 2 instances, against
// poppler's `pdftotext -layout` on the same file (text only, no structure): pages/s.
// Goal: ≥ 100 pages/s on 2 cores with the structure kept, which each run checks.
// engine-cpu-ms/page is the engine's CPU time per page (both cores together).
// BENCH_AI_PAGES sets the pages (default 200), BENCH_ITER the runs per side.
//
//	go test -run '^$' -bench BenchmarkAIReady -benchtime 1x ./bench/
func BenchmarkAIReady(b *testing.B) {
	mustTool(b, "pdftotext")
	n := envInt("BENCH_AI_PAGES", 200)
	iter := max(1, pdfIter/2)
	dir := b.TempDir()
	in := pdftest.WriteFile(filepath.Join(dir, "report.pdf"), aireadytest.Report(n))
	e := newAIEngine(b)
	run := func(i int) error {
		work := filepath.Join(dir, fmt.Sprintf("w-%d-%d", i, time.Now().UnixNano()))
		if err := os.Mkdir(work, 0o700); err != nil {
			return err
		}
		defer os.RemoveAll(work)
		out, err := e.Run(context.Background(), domain.EngineInput{Operation: aiready.Operation,
			Options: engineOptions(b, aiready.Specs(), aiready.Operation, `{"chunk_size":2000}`), Path: in, Filename: "report.pdf", WorkDir: work})
		if err != nil {
			return err
		}
		if out.Units != n {
			return fmt.Errorf("%d units for %d pages", out.Units, n)
		}
		md, err := os.ReadFile(filepath.Join(work, aiready.MarkdownName))
		if err != nil {
			return err
		}
		return checkReport(string(md), n)
	}
	txt := filepath.Join(dir, "out.txt")
	poppler := func(int) error { return runCLI("pdftotext", "-layout", in, txt) }
	for range b.N {
		if err := run(-1); err != nil { // warm-up, and the structure checked once more
			b.Fatal(err)
		}
		cpu0 := cpuTime(syscall.RUSAGE_SELF)
		ours := side(b, iter, run) * float64(n)
		cpu := cpuTime(syscall.RUSAGE_SELF) - cpu0
		theirs := side(b, iter, poppler) * float64(n)
		b.ReportMetric(ours, "engine-pages/s")
		// CPU time per page holds on a busy machine, where wall-clock rates do not.
		b.ReportMetric(cpu.Seconds()*1000/float64(iter*n), "engine-cpu-ms/page")
		b.ReportMetric(theirs, "pdftotext-pages/s")
		b.ReportMetric(ours/theirs, "x-pdftotext")
		b.ReportMetric(0, "ns/op")
	}
}

// newAIEngine is the ai engine on a PDFium pool of 2 instances, closed with the
// benchmark.
func newAIEngine(b *testing.B) *aiready.Engine {
	pool, err := pdfium.New(pdfium.Config{Instances: 2, CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pool.Close() })
	e, err := aiready.New(aiready.Config{Pool: pool})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// checkReport checks the markdown of aireadytest.Report(n) keeps its structure: every
// heading at its level, every list item, every table as a pipe table, and no running
// header, footer or page number.
func checkReport(md string, n int) error {
	count := func(prefix string) int {
		c := 0
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, prefix) {
				c++
			}
		}
		return c
	}
	per := func(k int) int { return (n - k + 3) / 4 } // pages i < n with i%4 == k
	want := map[string]int{
		"# Chapter ":                          per(0),
		"## Section ":                         per(1) + per(3),
		"### Topic ":                          per(2),
		"- b":                                 3 * per(0),
		"| Region | Revenue | Growth |":       per(1),
		"| Item | Quantity | Price | Total |": per(3),
		"| Nuts | 12 | 0.10 | 1.20 |":         per(3),
	}
	for prefix, w := range want {
		if got := count(prefix); got != w {
			return fmt.Errorf("%d lines start with %q, want %d", got, prefix, w)
		}
	}
	for _, f := range []string{"ACME Corporation", "Confidential", fmt.Sprintf("of %d", n)} {
		if strings.Contains(md, f) {
			return fmt.Errorf("running text %q survived", f)
		}
	}
	return nil
}
