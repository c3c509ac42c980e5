package pdfium_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// BenchmarkTextPages reads the text of a generated 50-page document (about 2,000
// characters a page) on all instances; pages/s is the figure ai-ready builds on.
func BenchmarkTextPages(b *testing.B) {
	path := pdftest.WriteFile(filepath.Join(b.TempDir(), "t.pdf"), pdftest.Numbered("", 50))
	if p := os.Getenv("BENCH_PDF"); p != "" {
		path = p
	}
	ctx := context.Background()
	pages := 0
	for b.Loop() {
		d, err := pool.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		all := make([]int, d.PageCount())
		for i := range all {
			all[i] = i + 1
		}
		if _, err := d.TextPages(ctx, all, nil); err != nil {
			b.Fatal(err)
		}
		pages += len(all)
		d.Close()
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}
