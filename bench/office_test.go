package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
)

// BenchmarkOfficeToPDF converts the same generated 10-page docx to PDF, side by side:
// one cold `soffice --headless --convert-to pdf` process per document (with a profile
// already created, as a warm machine has), the warm pool with one instance one at a
// time, and the pool's throughput with 1 and 2 instances (one client per instance).
// BENCH_DOCS sets how many documents each part converts (default 20).
//
//	go test -run '^$' -bench BenchmarkOfficeToPDF -benchtime 1x ./bench/
func BenchmarkOfficeToPDF(b *testing.B) {
	if _, err := exec.LookPath("soffice"); err != nil {
		b.Fatal("soffice is missing: apt-get install -y --no-install-recommends libreoffice-core-nogui libreoffice-writer-nogui python3-uno")
	}
	docs := envInt("BENCH_DOCS", 20)
	dir := b.TempDir()
	doc := officetest.DOCX(b, officetest.TextPages(10, 12))
	in := filepath.Join(dir, "ten.docx")
	if err := os.WriteFile(in, doc, 0o600); err != nil {
		b.Fatal(err)
	}
	format := domain.Detect(doc)

	b.Run("cold-soffice", func(b *testing.B) {
		profile := "file://" + filepath.Join(dir, "cold-profile")
		convert := func(out string) error {
			cmd := exec.Command("soffice", "-env:UserInstallation="+profile, "--headless",
				"--convert-to", "pdf", "--outdir", out, in)
			if o, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, o)
			}
			return nil
		}
		if err := convert(filepath.Join(dir, "cold-warmup")); err != nil { // creates the profile
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for i := range docs {
			if err := convert(filepath.Join(dir, fmt.Sprint("cold-", i))); err != nil {
				b.Fatal(err)
			}
		}
		el := time.Since(start)
		b.ReportMetric(float64(el.Milliseconds())/float64(docs), "ms/doc")
		b.ReportMetric(float64(docs)/el.Seconds(), "docs/s")
		b.ReportMetric(0, "ns/op")
	})

	for _, instances := range []int{1, 2} {
		b.Run(fmt.Sprintf("pool-%d-instances", instances), func(b *testing.B) {
			cfg := office.DefaultConfig()
			cfg.Instances = instances
			e, err := office.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var seq atomic.Int64
			convert := func() error {
				work := filepath.Join(dir, fmt.Sprint("w", seq.Add(1)))
				if err := os.Mkdir(work, 0o700); err != nil {
					return err
				}
				defer os.RemoveAll(work)
				_, err := e.Run(context.Background(), domain.EngineInput{
					Operation: "convert", Options: engineOptions(b, office.Specs(), "convert", `{"format":"pdf"}`), Path: in, Filename: "ten.docx",
					Format: format, ByteSize: int64(len(doc)), WorkDir: work,
				})
				return err
			}
			// Start every instance and let each convert once.
			var wg sync.WaitGroup
			for range instances {
				wg.Add(1)
				go func() { defer wg.Done(); _ = convert() }()
			}
			wg.Wait()

			if instances == 1 {
				// One at a time: the latency a single document sees.
				start := time.Now()
				for range docs {
					if err := convert(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(docs), "ms/doc-sequential")
			}

			// One client per instance, a closed loop: N instances' throughput.
			clients := instances
			var next atomic.Int64
			var failed atomic.Int64
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(docs) {
						if err := convert(); err != nil {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			if failed.Load() > 0 {
				b.Fatalf("%d conversions failed", failed.Load())
			}
			b.ReportMetric(float64(docs)/el.Seconds(), "docs/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
