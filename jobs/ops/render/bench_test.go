package render_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// BenchmarkRender50 renders a generated 50-page document; BENCH_FORMAT and BENCH_DPI
// choose the output.
func BenchmarkRender50(b *testing.B) {
	dir := b.TempDir()
	in := pdftest.WriteFile(filepath.Join(dir, "in.pdf"), pdftest.Numbered("", 50))
	format, dpi := os.Getenv("BENCH_FORMAT"), os.Getenv("BENCH_DPI")
	if format == "" {
		format = "png"
	}
	if dpi == "" {
		dpi = "72"
	}
	opts := engineOptions(b, "pdf.render", `{"format":"`+format+`","dpi":`+dpi+`}`)
	pages := 0
	for b.Loop() {
		work, _ := os.MkdirTemp(dir, "w")
		out, err := engine.Run(context.Background(), domain.EngineInput{Operation: "pdf.render", Options: opts, Path: in, Filename: "x.pdf", WorkDir: work})
		if err != nil {
			b.Fatal(err)
		}
		pages += out.Units
		os.RemoveAll(work)
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}
