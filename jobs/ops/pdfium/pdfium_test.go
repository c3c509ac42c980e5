package pdfium_test

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

var pool *pdfium.Pool

func TestMain(m *testing.M) {
	var err error
	pool, err = pdfium.New(pdfium.Config{Instances: 2, CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	pool.Close()
	os.Exit(code)
}

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	return pdftest.WriteFile(filepath.Join(t.TempDir(), name), data)
}

func TestCheck(t *testing.T) {
	if err := pool.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

// inked counts pixels that are clearly not white.
func inked(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			if r < 0xC000 || g < 0xC000 || bb < 0xC000 {
				n++
			}
		}
	}
	return n
}

func TestRenderSizes(t *testing.T) {
	ctx := context.Background()
	path := write(t, "in.pdf", pdftest.Numbered("", 3))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.PageCount() != 3 {
		t.Fatalf("pages = %d, want 3", d.PageCount())
	}
	dir := t.TempDir()
	cases := []struct {
		name  string
		opt   pdfium.RenderOptions
		w, h  int
		gray  bool
		pageN int
	}{
		{"Letter72dpi", pdfium.RenderOptions{}, 612, 792, false, 1},
		{"Letter150dpi", pdfium.RenderOptions{DPI: 150}, 1275, 1650, false, 2},
		{"Width300", pdfium.RenderOptions{Width: 300}, 300, 388, false, 3},
		{"Gray", pdfium.RenderOptions{DPI: 36, Gray: true}, 306, 396, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".png")
			r, err := d.RenderFile(ctx, c.pageN, pdfium.ImageOptions{RenderOptions: c.opt, Format: "png"}, out)
			if err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, out)
			if got := img.Bounds().Size(); got.X != c.w || got.Y != c.h || r.Width != c.w || r.Height != c.h {
				t.Fatalf("size = %v (reported %d×%d), want %d×%d", got, r.Width, r.Height, c.w, c.h)
			}
			if _, isGray := img.(*image.Gray); isGray != c.gray {
				t.Fatalf("gray = %v, want %v (%T)", isGray, c.gray, img)
			}
			// Text and the blue bar cover a few percent of the page; blank would be 0.
			if n := inked(img); n < c.w*c.h/100 {
				t.Fatalf("only %d inked pixels of %d: page rendered blank", n, c.w*c.h)
			}
		})
	}
}

func TestRenderFormatsAndColour(t *testing.T) {
	ctx := context.Background()
	path := write(t, "in.pdf", pdftest.Numbered("", 1))
	for _, f := range []string{"png", "jpeg", "webp"} {
		out := filepath.Join(t.TempDir(), "p."+f)
		if _, err := pool.RenderPage(ctx, path, 1, pdfium.ImageOptions{Format: f}, out); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(out)
		magic := map[string]string{"png": "\x89PNG", "jpeg": "\xff\xd8\xff", "webp": "RIFF"}[f]
		if !strings.HasPrefix(string(raw), magic) {
			t.Fatalf("%s output starts %q", f, raw[:8])
		}
	}
	// The bar at y 60..80 (from the bottom), x 72..540 is RGB (0.2, 0.4, 0.8).
	out := filepath.Join(t.TempDir(), "c.png")
	if _, err := pool.RenderPage(ctx, path, 1, pdfium.ImageOptions{Format: "png"}, out); err != nil {
		t.Fatal(err)
	}
	r, g, b, _ := decodePNG(t, out).At(300, 792-70).RGBA()
	if r>>8 < 40 || r>>8 > 62 || g>>8 < 92 || g>>8 > 112 || b>>8 < 194 || b>>8 > 214 {
		t.Fatalf("bar colour = %d,%d,%d, want about 51,102,204", r>>8, g>>8, b>>8)
	}
}

func TestRenderPagesParallelInOrder(t *testing.T) {
	ctx := context.Background()
	path := write(t, "in.pdf", pdftest.Numbered("", 6))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir := t.TempDir()
	var calls []int
	pages := []int{6, 1, 3, 3}
	res, err := d.RenderPages(ctx, pages, pdfium.ImageOptions{RenderOptions: pdfium.RenderOptions{DPI: 20}, Format: "png"},
		func(p int) string { return filepath.Join(dir, fmt.Sprintf("p%d-%d.png", p, time.Now().UnixNano())) },
		func(done, total int) { calls = append(calls, done*100/total) })
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Page != pages[i] {
			t.Fatalf("result %d is page %d, want %d", i, r.Page, pages[i])
		}
		decodePNG(t, r.Path)
	}
	if len(calls) != 4 || calls[3] != 100 {
		t.Fatalf("progress calls = %v", calls)
	}
	if _, err := d.RenderPages(ctx, []int{7}, pdfium.ImageOptions{Format: "png"}, func(int) string { return filepath.Join(dir, "x.png") }, nil); domain.ErrorCode(err) != domain.CodeInvalidRequest {
		t.Fatalf("page 7 of 6: %v", err)
	}
}

func TestBadInputs(t *testing.T) {
	ctx := context.Background()
	good := write(t, "good.pdf", pdftest.Numbered("", 2))
	enc := filepath.Join(t.TempDir(), "enc.pdf")
	if out, err := exec.Command("qpdf", "--encrypt", "user", "owner", "256", "--", good, enc).CombinedOutput(); err != nil {
		t.Fatalf("qpdf (apt-get install qpdf): %v %s", err, out)
	}
	raw, _ := os.ReadFile(good)
	cases := map[string]struct {
		path string
		code string
	}{
		"Encrypted":  {enc, domain.CodeEncryptedFile},
		"NotAPDF":    {write(t, "x.pdf", []byte("hello, this is text")), domain.CodeCorruptedFile},
		"Truncated":  {write(t, "t.pdf", raw[:300]), domain.CodeCorruptedFile},
		"EmptyBytes": {write(t, "e.pdf", nil), domain.CodeCorruptedFile},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := pool.Open(ctx, c.path)
			if err == nil {
				// A file PDFium could half-recover must still fail on the page it lost.
				_, err = d.Render(ctx, 1, pdfium.RenderOptions{})
				d.Close()
			}
			if got := domain.ErrorCode(err); got != c.code {
				t.Fatalf("code = %s (%v), want %s", got, err, c.code)
			}
		})
	}
}

func TestPixelLimit(t *testing.T) {
	ctx := context.Background()
	path := write(t, "in.pdf", pdftest.Numbered("", 1))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.Render(ctx, 1, pdfium.RenderOptions{DPI: 5000})
	if domain.ErrorCode(err) != domain.CodeUnsupportedInput {
		t.Fatalf("5000 dpi: %v", err)
	}
}

// A page that takes PDFium seconds is stopped at the deadline, mid-page, and the pool
// keeps working with a fresh instance.
func TestDeadlineStopsRendering(t *testing.T) {
	// Large shapes, few of them: drawing costs seconds at 600 dpi, parsing next to
	// nothing. Loading a page parses its content in one PDFium call that does not stop
	// (see Pool), so a page of many small shapes would test the parse instead.
	var c strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&c, "%.2f g %d %d 150 150 re f\n", float64(i%10)/10, (i*37)%460, (i*53)%640)
	}
	var w pdftest.Writer
	path := write(t, "heavy.pdf", w.Document([]pdftest.Page{{Width: 612, Height: 792, Content: c.String()}}))
	d, err := pool.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The whole render on this machine as it is now is the yardstick: an interrupted render
	// must stop well before it. The work is judged in CPU time (the package's tests run one
	// at a time, so the process's CPU is this render's), which a busy machine does not
	// stretch as it does the wall clock.
	start, cpu := time.Now(), cpuTime(t)
	if _, err := d.Render(context.Background(), 1, pdfium.RenderOptions{DPI: 600}); err != nil {
		t.Fatal(err)
	}
	whole, wholeCPU := time.Since(start), cpuTime(t)-cpu
	ctx, cancel := context.WithTimeout(context.Background(), whole/20)
	defer cancel()
	start, cpu = time.Now(), cpuTime(t)
	_, err = d.Render(ctx, 1, pdfium.RenderOptions{DPI: 600})
	took, tookCPU := time.Since(start), cpuTime(t)-cpu
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v after %v, want the deadline", err, took)
	}
	t.Logf("whole render %v of CPU (%v wall), interrupted after %v (%v wall)", wholeCPU, whole, tookCPU, took)
	if tookCPU > wholeCPU/2 {
		t.Fatalf("stopped after %v of CPU (%v wall) of a %v render (%v wall): not interrupted mid-page", tookCPU, took, wholeCPU, whole)
	}
	if err := pool.Check(context.Background()); err != nil {
		t.Fatalf("pool after an interrupted render: %v", err)
	}
}

// cpuTime is the CPU time this process has used, all its threads together.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
