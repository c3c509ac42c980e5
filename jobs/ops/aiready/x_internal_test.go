package aiready

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/filemill/filemill/jobs/ops/pdfium"
)

func TestDumpSegs(t *testing.T) {
	path := os.Getenv("DUMP_PDF")
	if path == "" {
		t.Skip()
	}
	pool, _ := pdfium.New(pdfium.Config{Instances: 1, CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
	defer pool.Close()
	d, err := pool.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pts, err := d.TextPages(context.Background(), []int{1, 2, 3}[:d.PageCount()], nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range pts {
		for _, r := range pt.Runs {
			if r.Box.Y0 > 0 {
				fmt.Printf("run %6.1f %6.1f %6.1f %q\n", r.Box.X0, r.Box.X1, r.Box.Y0, r.Text)
			}
		}
		p := newPageData(pt, false)
		l := &layouter{page: p.page, body: 12, minGap: 6}
		tabs, _ := l.ruledTables(p.segs, p.rules)
		for _, tb := range tabs {
			fmt.Printf("TABLE %+v rows %q\n", tb.box, tb.tab.rows)
		}
		for _, s := range p.segs {
			fmt.Printf("p%d %6.1f %6.1f %6.1f %6.1f size %.1f bold %v %q\n", pt.Page, s.box.X0, s.box.Y0, s.box.X1, s.box.Y1, s.size, s.bold, s.text)
		}
		for _, r := range p.rules {
			fmt.Printf("rule %6.1f %6.1f %6.1f %6.1f\n", r.X0, r.Y0, r.X1, r.Y1)
		}
	}
}
