package ocr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/memcg/memcgtest"
	"github.com/filemill/filemill/jobs/ops/ocr"
	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

func TestMain(m *testing.M) {
	for _, tool := range []string{"pdftoppm", "pdftotext"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "%s is missing: apt-get install -y --no-install-recommends poppler-utils\n", tool)
			os.Exit(1)
		}
	}
	if _, err := os.Stat("/usr/share/tesseract-ocr/5/tessdata/eng.traineddata"); err != nil && os.Getenv("TESSDATA_PREFIX") == "" {
		fmt.Fprintln(os.Stderr, "English language data is missing: apt-get install -y --no-install-recommends tesseract-ocr-eng libtesseract-dev")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// pdftoppm plays the platform's renderer: poppler's rasteriser, a real tool.
func pdftoppm(ctx context.Context, pdf string, page, dpi int, format, out string) error {
	if format != "png" {
		return fmt.Errorf("pdftoppm: %s output not used here", format)
	}
	cmd := exec.CommandContext(ctx, "pdftoppm", "-png", "-gray", "-singlefile", "-r", strconv.Itoa(dpi),
		"-f", strconv.Itoa(page), "-l", strconv.Itoa(page), pdf, strings.TrimSuffix(out, ".png"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pdftoppm: %v: %s", err, b)
	}
	return nil
}

var (
	engOnce sync.Once
	eng     *ocr.Engine
)

func engine(t *testing.T) *ocr.Engine {
	t.Helper()
	engOnce.Do(func() {
		cfg := ocr.DefaultConfig()
		cfg.RenderPage = pdftoppm
		e, err := ocr.New(cfg)
		require.NoError(t, err)
		eng = e
	})
	return eng
}

func run(t *testing.T, e *ocr.Engine, path string, opts ocr.Options, progress func(int)) (*domain.EngineOutput, error) {
	t.Helper()
	return runWithin(t, e, path, opts, progress, 0)
}

// runWithin is run with the job's memory bounded to memory bytes (0: none).
func runWithin(t *testing.T, e *ocr.Engine, path string, opts ocr.Options, progress func(int), memory int64) (*domain.EngineOutput, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	work := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	raw, _ := json.Marshal(opts)
	o, err := domain.DecodeOptions(ocr.Specs(), "ocr", raw)
	if err != nil {
		return nil, err
	}
	out, err := e.Run(context.Background(), domain.EngineInput{
		Operation: "ocr", Options: o, Path: path, Filename: filepath.Base(path),
		Format: domain.Detect(b[:min(len(b), domain.DetectSniffBytes)]), ByteSize: int64(len(b)),
		WorkDir: work, Progress: progress, Limits: domain.JobLimits{Memory: memory},
	})
	if err == nil {
		for _, a := range out.Artifacts {
			require.Equal(t, work, filepath.Dir(a.Path))
		}
		ents, _ := os.ReadDir(work)
		require.Len(t, ents, len(out.Artifacts), "no scratch files are left")
	}
	return out, err
}

func artifact(t *testing.T, out *domain.EngineOutput, name string) string {
	t.Helper()
	for _, a := range out.Artifacts {
		if a.Name == name {
			return a.Path
		}
	}
	t.Fatalf("no artifact %s in %+v", name, out.Artifacts)
	return ""
}

// accuracy is the share of want's words found, in order, in got (a dropped or garbled
// word costs one).
func accuracy(want []string, got string) float64 {
	g := strings.Fields(got)
	for i, x := range g {
		g[i] = strings.Trim(x, ".,;:")
	}
	return float64(ocrtest.CommonWords(want, g)) / float64(len(want))
}

func TestPageOfKnownTextGivesItsWordsBack(t *testing.T) {
	t.Parallel()
	e := engine(t)
	words := ocrtest.Text(1, 200)
	dir := t.TempDir()
	page := ocrtest.WritePNG(t, dir, "scan.png", ocrtest.Page(t, ocrtest.Lines(words, 10)))

	var progress []int
	out, err := run(t, e, page, ocr.Options{Outputs: []string{"text", "words", "pdf"}}, func(p int) { progress = append(progress, p) })
	require.NoError(t, err)
	require.Equal(t, 1, out.Units, "priced per page")
	require.Equal(t, []int{100}, progress)

	text, err := os.ReadFile(artifact(t, out, "scan.txt"))
	require.NoError(t, err)
	acc := accuracy(words, string(text))
	require.GreaterOrEqual(t, acc, 0.98, "word accuracy %.3f; got %q", acc, text)

	var rep ocr.WordsReport
	b, err := os.ReadFile(artifact(t, out, "scan.words.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Pages, 1)
	require.Equal(t, ocrtest.Width, rep.Pages[0].Width)
	var got []string
	for _, w := range rep.Pages[0].Words {
		got = append(got, w.Text)
		require.Greater(t, w.Confidence, 0.0)
		require.LessOrEqual(t, w.Confidence, 100.0)
		require.True(t, w.BBox[0] < w.BBox[2] && w.BBox[1] < w.BBox[3], "a real box: %v", w.BBox)
		require.GreaterOrEqual(t, w.BBox[0], 250, "words sit right of the left margin")
	}
	require.GreaterOrEqual(t, accuracy(words, strings.Join(got, " ")), 0.98)
	first := rep.Pages[0].Words[0]
	require.InDelta(t, 300, first.BBox[0], 20, "the first word starts where it was drawn")

	pdf := artifact(t, out, "scan.pdf")
	// -raw: the text layer in its content order (tesseract writes it word by word).
	layer, err := exec.Command("pdftotext", "-raw", pdf, "-").Output()
	require.NoError(t, err, "the searchable PDF reads")
	require.GreaterOrEqual(t, accuracy(words, string(layer)), 0.98, "the text layer holds the words: %q", layer)
}

func TestTwoPageScanGivesTwoPagesInOrder(t *testing.T) {
	t.Parallel()
	e := engine(t)
	dir := t.TempDir()
	w1, w2 := ocrtest.Text(2, 60), ocrtest.Text(3, 60)
	w1[0], w2[0] = "FIRSTPAGE", "SECONDPAGE"
	p1 := ocrtest.WritePNG(t, dir, "p1.png", ocrtest.Page(t, ocrtest.Lines(w1, 10)))
	p2 := ocrtest.WritePNG(t, dir, "p2.png", ocrtest.Page(t, ocrtest.Lines(w2, 10)))
	pdf := ocrtest.PDF(t, []string{p1, p2}, filepath.Join(dir, "scan.pdf"))

	var mu sync.Mutex
	var progress []int
	out, err := run(t, e, pdf, ocr.Options{Outputs: []string{"text", "pdf"}}, func(p int) { mu.Lock(); progress = append(progress, p); mu.Unlock() })
	require.NoError(t, err)
	require.Equal(t, 2, out.Units)
	require.ElementsMatch(t, []int{50, 100}, progress, "page-wise progress")

	text, err := os.ReadFile(artifact(t, out, "scan.txt"))
	require.NoError(t, err)
	pages := strings.Split(string(text), "\f")
	require.Len(t, pages, 2, "one form feed between two pages")
	require.GreaterOrEqual(t, accuracy(w1, pages[0]), 0.98, "page 1: %q", pages[0])
	require.GreaterOrEqual(t, accuracy(w2, pages[1]), 0.98, "page 2: %q", pages[1])

	searchable := artifact(t, out, "scan.pdf")
	for i, w := range [][]string{w1, w2} {
		layer, err := exec.Command("pdftotext", "-raw", "-f", strconv.Itoa(i+1), "-l", strconv.Itoa(i+1), searchable, "-").Output()
		require.NoError(t, err)
		require.GreaterOrEqual(t, accuracy(w, string(layer)), 0.98, "page %d of the searchable PDF", i+1)
	}
	info, err := exec.Command("pdfinfo", searchable).Output()
	require.NoError(t, err)
	require.Contains(t, string(info), "Pages:           2")
}

func TestSparsePageIsRetriedWithSparseSegmentation(t *testing.T) {
	t.Parallel()
	e := engine(t)
	// A few isolated labels scattered over an empty page, as on a form or a chart.
	img := ocrtest.Page(t, nil)
	labels := []string{"north", "valve", "seven"}
	for i, l := range labels {
		src := ocrtest.Page(t, []string{l})
		// Move each label far from the others.
		r := image.Rect(300, 250, 900, 330)
		draw.Draw(img, r.Add(image.Pt(i*700, i*1200)), src, r.Min, draw.Src)
	}
	page := ocrtest.WritePNG(t, t.TempDir(), "labels.png", img)
	out, err := run(t, e, page, ocr.Options{}, nil)
	require.NoError(t, err)
	text, err := os.ReadFile(artifact(t, out, "labels.txt"))
	require.NoError(t, err)
	for _, l := range labels {
		require.Contains(t, string(text), l)
	}
}

// Pages are recognised in helper processes, each in a memory cgroup bound to what it
// holds loaded plus the page's share of the job's memory: what a page takes is
// measured by the kernel, not estimated. A page of noise (every speck a blob) is
// killed past its bound and fails resource_limit_exceeded; the engine goes on with a
// new helper; a flat page the estimate would refuse is read within the same bound.
func TestPageMemoryIsBoundedByTheKernel(t *testing.T) {
	t.Parallel()
	memcgtest.Open(t).Close()
	e := engine(t)
	require.True(t, e.Isolated(), "a memory cgroup can be made here: pages run in helpers")
	const bound = 48 << 20
	dir := t.TempDir()

	_, err := runWithin(t, e, ocrtest.WritePNG(t, dir, "noise.png", ocrtest.Noise(3000, 3000)), ocr.Options{}, nil, bound)
	derr := domain.AsError(err)
	require.NotNil(t, derr, "%v", err)
	require.Equal(t, domain.CodeResourceLimitExceeded, derr.Code, derr.Message)
	require.Equal(t, domain.LimitMemory, derr.Details["limit"])

	// 2000×2000: 61 MiB by the estimate of 16 bytes a pixel, far less read.
	flat := image.NewGray(image.Rect(0, 0, 2000, 2000))
	for i := range flat.Pix {
		flat.Pix[i] = 255
	}
	flatPath := ocrtest.WritePNG(t, dir, "flat.png", flat)
	_, err = runWithin(t, e, flatPath, ocr.Options{}, nil, bound)
	require.NoError(t, err)

	text := ocrtest.WritePNG(t, dir, "page.png", ocrtest.Page(t, []string{"The harbour opened in spring"}))
	out, err := runWithin(t, e, text, ocr.Options{}, nil, bound)
	require.NoError(t, err)
	got, err := os.ReadFile(artifact(t, out, "page.txt"))
	require.NoError(t, err)
	require.Contains(t, string(got), "harbour opened")

	// In the worker's own process the same flat page is refused by its estimate.
	cfg := ocr.DefaultConfig()
	cfg.InProcess = true
	inProcess, err := ocr.New(cfg)
	require.NoError(t, err)
	defer inProcess.Close()
	require.False(t, inProcess.Isolated())
	_, err = runWithin(t, inProcess, flatPath, ocr.Options{}, nil, bound)
	derr = domain.AsError(err)
	require.NotNil(t, derr, "%v", err)
	require.Equal(t, domain.CodeResourceLimitExceeded, derr.Code, derr.Message)
}

func TestBlankPageGivesEmptyTextNotAnError(t *testing.T) {
	t.Parallel()
	e := engine(t)
	page := ocrtest.WritePNG(t, t.TempDir(), "blank.png", ocrtest.Page(t, nil))
	out, err := run(t, e, page, ocr.Options{Outputs: []string{"text", "words"}}, nil)
	require.NoError(t, err)
	text, err := os.ReadFile(artifact(t, out, "blank.txt"))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(text)))
}

func TestOCRErrors(t *testing.T) {
	t.Parallel()
	e := engine(t)
	dir := t.TempDir()
	page := ocrtest.WritePNG(t, dir, "p.png", ocrtest.Page(t, []string{"hello"}))

	_, err := run(t, e, page, ocr.Options{Languages: []string{"xyz"}}, nil)
	require.Equal(t, domain.CodeInvalidRequest, domain.ErrorCode(err))
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "options.languages", de.Param)
	require.Contains(t, de.Message, "eng", "names what is installed")

	require.Error(t, ocr.Options{Outputs: []string{"html"}}.Validate())
	require.Error(t, ocr.Options{Languages: []string{"../etc"}}.Validate())
	require.Error(t, ocr.Options{Outputs: []string{}}.Validate())

	b, err := os.ReadFile(page)
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut.png")
	require.NoError(t, os.WriteFile(cut, b[:40], 0o600))
	_, err = run(t, e, cut, ocr.Options{}, nil)
	require.Equal(t, domain.CodeCorruptedFile, domain.ErrorCode(err), "%v", err)

	pdf := ocrtest.PDF(t, []string{page}, filepath.Join(dir, "p.pdf"))
	pb, err := os.ReadFile(pdf)
	require.NoError(t, err)
	cutPDF := filepath.Join(dir, "cut.pdf")
	require.NoError(t, os.WriteFile(cutPDF, pb[:len(pb)/3], 0o600))
	_, err = run(t, e, cutPDF, ocr.Options{}, nil)
	require.Equal(t, domain.CodeCorruptedFile, domain.ErrorCode(err), "%v", err)

	locked := filepath.Join(dir, "locked.pdf")
	qb, err := exec.Command("qpdf", "--encrypt", "user", "owner", "256", "--", pdf, locked).CombinedOutput()
	require.NoError(t, err, "qpdf (apt-get install qpdf): %s", qb)
	_, err = run(t, e, locked, ocr.Options{}, nil)
	require.Equal(t, domain.CodeEncryptedFile, domain.ErrorCode(err), "%v", err)

	small, err := ocr.New(ocr.Config{MaxPixels: 1000})
	require.NoError(t, err)
	defer small.Close()
	_, err = run(t, small, page, ocr.Options{}, nil)
	require.Equal(t, domain.CodeUnsupportedInput, domain.ErrorCode(err))
	_, err = run(t, small, pdf, ocr.Options{}, nil)
	require.Equal(t, domain.CodeUnsupportedInput, domain.ErrorCode(err), "PDF input needs a renderer")
}

func TestCancelledRunReturnsPromptly(t *testing.T) {
	t.Parallel()
	e := engine(t)
	dir := t.TempDir()
	var pngs []string
	for i := range 6 {
		pngs = append(pngs, ocrtest.WritePNG(t, dir, fmt.Sprintf("p%d.png", i), ocrtest.Page(t, ocrtest.Lines(ocrtest.Text(i, 300), 10))))
	}
	pdf := ocrtest.PDF(t, pngs, filepath.Join(dir, "six.pdf"))
	b, err := os.ReadFile(pdf)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	work := t.TempDir()
	res := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, domain.EngineInput{Operation: "ocr", Path: pdf, Filename: "six.pdf",
			Format: domain.Detect(b[:min(len(b), domain.DetectSniffBytes)]), WorkDir: work,
			Progress: func(int) { once.Do(func() { close(started) }) }})
		res <- err
	}()
	select {
	case <-started: // a page is done: others are mid-recognition
	case err := <-res:
		t.Fatalf("the run ended before any page was done: %v", err)
	}
	cancel()
	select {
	case err := <-res:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not stop after cancellation")
	}
	// The engine still works afterwards.
	page := ocrtest.WritePNG(t, dir, "after.png", ocrtest.Page(t, []string{"still working fine"}))
	out, err := run(t, e, page, ocr.Options{}, nil)
	require.NoError(t, err)
	text, _ := os.ReadFile(artifact(t, out, "after.txt"))
	require.Contains(t, string(text), "still working fine")
}

func TestCheckVersionLanguages(t *testing.T) {
	t.Parallel()
	e := engine(t)
	require.NoError(t, e.Check(context.Background()))
	require.Regexp(t, `^tesseract 5\.`, e.Version())
	langs, err := e.Languages()
	require.NoError(t, err)
	require.Contains(t, langs, "eng")
	require.NotContains(t, langs, "osd")
	missing, err := ocr.New(ocr.Config{TessdataDir: t.TempDir()})
	require.NoError(t, err)
	require.Error(t, missing.Check(context.Background()))
	specs := ocr.Specs()
	require.Len(t, specs, 1)
	require.Equal(t, domain.Price{Credits: 2, Per: "page"}, specs[0].Price)
	require.Equal(t, "ocr", specs[0].Engine)
}

// pdftoppmBitmap renders like pdftoppm and hands over the decoded pixels, as the
// platform's in-memory renderer does: gray bytes, or R, G, B and an unused byte.
func pdftoppmBitmap(gray bool) ocr.RenderBitmapFunc {
	return func(ctx context.Context, pdf string, page, dpi int) (*ocr.Bitmap, error) {
		dir, err := os.MkdirTemp("", "ocr-bitmap-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "page.png")
		if err := pdftoppmColor(gray)(ctx, pdf, page, dpi, "png", out); err != nil {
			return nil, err
		}
		f, err := os.Open(out)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			return nil, err
		}
		r := img.Bounds()
		if g, ok := img.(*image.Gray); ok && gray {
			return &ocr.Bitmap{Width: r.Dx(), Height: r.Dy(), Stride: g.Stride, Gray: true, Pix: g.Pix}, nil
		}
		rgba := image.NewRGBA(r)
		draw.Draw(rgba, r, img, r.Min, draw.Src)
		return &ocr.Bitmap{Width: r.Dx(), Height: r.Dy(), Stride: rgba.Stride, Pix: rgba.Pix}, nil
	}
}

// pdftoppmColor is pdftoppm rendering in gray or in colour.
func pdftoppmColor(gray bool) ocr.RenderPageFunc {
	if gray {
		return pdftoppm
	}
	return func(ctx context.Context, pdf string, page, dpi int, _, out string) error {
		cmd := exec.CommandContext(ctx, "pdftoppm", "-png", "-singlefile", "-r", strconv.Itoa(dpi),
			"-f", strconv.Itoa(page), "-l", strconv.Itoa(page), pdf, strings.TrimSuffix(out, ".png"))
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pdftoppm: %v: %s", err, b)
		}
		return nil
	}
}

// A page rendered into memory is recognised exactly as the same page rendered into an
// image file: same text, same words, boxes and confidences, same text layer.
func TestBitmapPageGivesWhatItsImageFileGives(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	words := ocrtest.Text(4, 120)
	page := ocrtest.WritePNG(t, dir, "p.png", ocrtest.Page(t, ocrtest.Lines(words, 10)))
	pdf := ocrtest.PDF(t, []string{page}, filepath.Join(dir, "scan.pdf"))
	opts := ocr.Options{Outputs: []string{"text", "words", "pdf"}}
	for _, gray := range []bool{true, false} {
		t.Run(map[bool]string{true: "Gray", false: "RGB"}[gray], func(t *testing.T) {
			t.Parallel()
			fromFile, err := ocr.New(ocr.Config{RenderPage: pdftoppmColor(gray)})
			require.NoError(t, err)
			defer fromFile.Close()
			fromMemory, err := ocr.New(ocr.Config{RenderBitmap: pdftoppmBitmap(gray)})
			require.NoError(t, err)
			defer fromMemory.Close()

			want, err := run(t, fromFile, pdf, opts, nil)
			require.NoError(t, err)
			got, err := run(t, fromMemory, pdf, opts, nil)
			require.NoError(t, err)
			for _, name := range []string{"scan.txt", "scan.words.json"} {
				w, err := os.ReadFile(artifact(t, want, name))
				require.NoError(t, err)
				g, err := os.ReadFile(artifact(t, got, name))
				require.NoError(t, err)
				require.Equal(t, string(w), string(g), name)
			}
			text, _ := os.ReadFile(artifact(t, got, "scan.txt"))
			require.GreaterOrEqual(t, accuracy(words, string(text)), 0.98)
			wl, err := exec.Command("pdftotext", "-raw", artifact(t, want, "scan.pdf"), "-").Output()
			require.NoError(t, err)
			gl, err := exec.Command("pdftotext", "-raw", artifact(t, got, "scan.pdf"), "-").Output()
			require.NoError(t, err)
			require.Equal(t, string(wl), string(gl), "the text layers")
			info, err := exec.Command("pdfimages", "-list", artifact(t, got, "scan.pdf")).Output()
			require.NoError(t, err)
			require.Regexp(t, fmt.Sprintf(`\b%d\s+%d\b`, ocrtest.Width, ocrtest.Height), string(info), "the page image at full size")

			small, err := ocr.New(ocr.Config{RenderBitmap: pdftoppmBitmap(gray), MaxPixels: 1000})
			require.NoError(t, err)
			defer small.Close()
			_, err = run(t, small, pdf, ocr.Options{}, nil)
			require.Equal(t, domain.CodeUnsupportedInput, domain.ErrorCode(err), "%v", err)
		})
	}
}

var (
	poolOnce sync.Once
	pool     *pdfium.Pool
	pdfEng   *ocr.Engine
)

// workerEngine is the engine as workers run it: PDF pages read by PDFium, a scan's
// image as stored, other pages rendered.
func workerEngine(t *testing.T) *ocr.Engine {
	t.Helper()
	poolOnce.Do(func() {
		p, err := pdfium.New(pdfium.Config{Instances: 2, CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")})
		require.NoError(t, err)
		require.NoError(t, p.Start())
		pool = p
		cfg := ocr.DefaultConfig()
		cfg.RenderBitmap, cfg.PageContent = ocr.PDFiumRenderer(p), ocr.PDFiumContent(p)
		e, err := ocr.New(cfg)
		require.NoError(t, err)
		pdfEng = e
	})
	require.NotNil(t, pdfEng, "the PDFium pool did not start")
	return pdfEng
}

// layerText is what pdftotext reads from a searchable PDF's page (0: all pages).
func layerText(t *testing.T, pdf string, page int) string {
	t.Helper()
	args := []string{}
	if page > 0 {
		args = append(args, "-f", strconv.Itoa(page), "-l", strconv.Itoa(page))
	}
	out, err := exec.Command("pdftotext", append(args, pdf, "-")...).Output()
	require.NoError(t, err, "pdftotext reads the searchable PDF")
	return string(out)
}

func qpdfCheck(t *testing.T, pdf string) {
	t.Helper()
	out, err := exec.Command("qpdf", "--check", pdf).CombinedOutput()
	require.NoError(t, err, "qpdf --check (apt-get install qpdf): %s", out)
	require.Contains(t, string(out), "No syntax or stream encoding errors found")
	require.NotContains(t, strings.ToLower(string(out)), "warning")
}

// A phone photo of a page is stored turned or mirrored, with the EXIF orientation
// that shows it upright: every one of the eight reads as the page reads, and its
// searchable PDF is an upright page with the JPEG embedded as it came.
func TestEveryEXIFOrientationOfAPhotoReadsTheSameWords(t *testing.T) {
	t.Parallel()
	e := engine(t)
	words := ocrtest.Text(5, 24)
	upright := ocrtest.Draw(t, ocrtest.Lines(words, 6), 1500, 750, 300)
	for o := 1; o <= 8; o++ {
		t.Run(fmt.Sprintf("Orientation%d", o), func(t *testing.T) {
			t.Parallel()
			data := ocrtest.OrientedJPEG(t, upright, o)
			photo := filepath.Join(t.TempDir(), "photo.jpg")
			require.NoError(t, os.WriteFile(photo, data, 0o600))
			out, err := run(t, e, photo, ocr.Options{Outputs: []string{"text", "words", "pdf"}}, nil)
			require.NoError(t, err)
			text, err := os.ReadFile(artifact(t, out, "photo.txt"))
			require.NoError(t, err)
			require.GreaterOrEqual(t, accuracy(words, string(text)), 0.95, "orientation %d read %q", o, text)

			var rep ocr.WordsReport
			b, err := os.ReadFile(artifact(t, out, "photo.words.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &rep))
			require.Equal(t, []int{1500, 750}, []int{rep.Pages[0].Width, rep.Pages[0].Height}, "words are boxed in the upright image")
			require.InDelta(t, 300, rep.Pages[0].Words[0].BBox[0], 25, "the first word starts where it was drawn")

			pdf := artifact(t, out, "photo.pdf")
			qpdfCheck(t, pdf)
			pb, err := os.ReadFile(pdf)
			require.NoError(t, err)
			require.True(t, bytes.Contains(pb, data), "the JPEG is embedded as it came")
			info, err := exec.Command("pdfinfo", pdf).Output()
			require.NoError(t, err)
			var pw, ph float64
			for _, l := range strings.Split(string(info), "\n") {
				if v, ok := strings.CutPrefix(l, "Page size:"); ok {
					_, err := fmt.Sscanf(strings.TrimSpace(v), "%g x %g", &pw, &ph)
					require.NoError(t, err)
				}
			}
			require.InDelta(t, 2.0, pw/ph, 0.01, "the page is upright (landscape, as drawn)")
			require.GreaterOrEqual(t, accuracy(words, layerText(t, pdf, 1)), 0.95, "the text layer reads as the photo")
		})
	}
}

// wordAgreement is the share of words two readings have in common, in order, against
// the longer of the two.
func wordAgreement(want, got string) float64 {
	w, g := strings.Fields(want), strings.Fields(got)
	if len(w) == 0 && len(g) == 0 {
		return 1
	}
	return float64(ocrtest.CommonWords(w, g)) / float64(max(len(w), len(g)))
}

// countingEngine is the workers' engine (see workerEngine) counting the pages it
// renders.
func countingEngine(t *testing.T) (*ocr.Engine, *atomic.Int64) {
	t.Helper()
	workerEngine(t)
	rendered := new(atomic.Int64)
	render := ocr.PDFiumRenderer(pool)
	cfg := ocr.DefaultConfig()
	cfg.RenderBitmap = func(ctx context.Context, pdf string, page, dpi int) (*ocr.Bitmap, error) {
		rendered.Add(1)
		return render(ctx, pdf, page, dpi)
	}
	cfg.PageContent = ocr.PDFiumContent(pool)
	e, err := ocr.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e, rendered
}

// The searchable PDF of a scan keeps the scan: its pages, their JPEG images as they
// are, with an invisible text layer that reads as the OCR text, words where the page
// shows them. The scan's images are recognised as stored: no page is rendered.
func TestSearchablePDFOfAScanKeepsItsImagesAndStaysSmall(t *testing.T) {
	t.Parallel()
	e, rendered := countingEngine(t)

	pages := [][]string{ocrtest.Lines(ocrtest.Text(11, 120), 10), ocrtest.Lines(ocrtest.Text(12, 120), 10), ocrtest.Lines(ocrtest.Text(13, 120), 10)}
	pages[1][0] = "SECONDPAGE " + pages[1][0]
	dir := t.TempDir()
	scan := filepath.Join(dir, "scan.pdf")
	require.NoError(t, os.WriteFile(scan, ocrtest.ScannedPDF(t, pages, 200), 0o600))
	out, err := run(t, e, scan, ocr.Options{Outputs: []string{"text", "words", "pdf"}}, nil)
	require.NoError(t, err)
	require.Zero(t, rendered.Load(), "a scan's pages are read from their images, not rendered")

	pdf := artifact(t, out, "scan.pdf")
	qpdfCheck(t, pdf)
	in, err := os.Stat(scan)
	require.NoError(t, err)
	st, err := os.Stat(pdf)
	require.NoError(t, err)
	require.LessOrEqual(t, float64(st.Size()), 1.1*float64(in.Size()), "searchable %d bytes, scan %d", st.Size(), in.Size())
	list, err := exec.Command("pdfimages", "-list", pdf).Output()
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(list), " jpeg "), "the three page images, still JPEG: %s", list)
	require.Equal(t, 3, strings.Count(string(list), " 200   200 "), "at their 200 dpi: %s", list)

	text, err := os.ReadFile(artifact(t, out, "scan.txt"))
	require.NoError(t, err)
	ocrPages := strings.Split(string(text), "\f")
	require.Len(t, ocrPages, 3)
	for i := range pages {
		want := strings.Join(pages[i], " ")
		require.GreaterOrEqual(t, accuracy(strings.Fields(want), ocrPages[i]), 0.98, "page %d reads as drawn: %q", i+1, ocrPages[i])
		layer := layerText(t, pdf, i+1)
		require.GreaterOrEqual(t, wordAgreement(ocrPages[i], layer), 0.99, "page %d: the text layer is the OCR text\nOCR:   %q\nlayer: %q", i+1, ocrPages[i], layer)
	}

	// Each word sits where the page shows it: the layer's boxes (pdftotext -bbox, in
	// points) against the recognised boxes (pixels at 200 dpi).
	var rep ocr.WordsReport
	b, err := os.ReadFile(artifact(t, out, "scan.words.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, 200, rep.Pages[1].DPI)
	boxes := bboxWords(t, pdf, 2)
	require.NotEmpty(t, boxes)
	for i, w := range rep.Pages[1].Words[:20] {
		got := boxes[i]
		require.Equal(t, w.Text, got.text)
		k := 72.0 / 200
		require.InDelta(t, float64(w.BBox[0])*k, got.x0, 3, "left of %q", w.Text)
		require.InDelta(t, float64(w.BBox[2])*k, got.x1, 3, "right of %q", w.Text)
		require.InDelta(t, float64(w.BBox[3])*k, got.y1, 4, "foot of %q", w.Text)
	}
}

type bboxWord struct {
	text           string
	x0, y0, x1, y1 float64
}

// bboxWords is pdftotext -bbox's words of a page, in points from the top left.
func bboxWords(t *testing.T, pdf string, page int) []bboxWord {
	t.Helper()
	out, err := exec.Command("pdftotext", "-bbox", "-f", strconv.Itoa(page), "-l", strconv.Itoa(page), pdf, "-").Output()
	require.NoError(t, err)
	var words []bboxWord
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "<word ") {
			continue
		}
		var w bboxWord
		_, err := fmt.Sscanf(l, `<word xMin="%g" yMin="%g" xMax="%g" yMax="%g">`, &w.x0, &w.y0, &w.x1, &w.y1)
		require.NoError(t, err, l)
		w.text = html.UnescapeString(strings.TrimSuffix(l[strings.Index(l, ">")+1:], "</word>"))
		words = append(words, w)
	}
	return words
}

// A page shown turned (/Rotate 90, its scan stored on its side) is rendered upright
// and its text layer lands on the words as displayed; a born-digital page keeps its
// own text and gets no second layer.
func TestSearchablePDFOfRotatedAndBornDigitalPages(t *testing.T) {
	t.Parallel()
	e := workerEngine(t)
	words := ocrtest.Text(21, 60)
	upright := ocrtest.Draw(t, ocrtest.Lines(words, 10), 1700, 2200, 200)
	// Stored a quarter turn anticlockwise on a landscape page, shown turned clockwise.
	sideways := ocrtest.OrientedJPEG(t, upright, 6)
	var w pdftest.Writer
	im := w.AddStream("/Type/XObject/Subtype/Image/Width 2200/Height 1700/ColorSpace/DeviceGray/BitsPerComponent 8/Filter/DCTDecode", sideways)
	digital := "BT /F1 14 Tf 72 700 Td (Born digital page with its own text) Tj ET"
	doc := w.Document([]pdftest.Page{
		{Width: 792, Height: 612, Rotate: 90, Content: "q 792 0 0 612 0 0 cm /Im1 Do Q", Images: map[string]int{"Im1": im}},
		{Width: 612, Height: 792, Content: digital, Fonts: map[string]string{"F1": "Helvetica"}},
	})
	in := filepath.Join(t.TempDir(), "mixed.pdf")
	require.NoError(t, os.WriteFile(in, doc, 0o600))
	out, err := run(t, e, in, ocr.Options{Outputs: []string{"text", "pdf"}}, nil)
	require.NoError(t, err)
	pdf := artifact(t, out, "mixed.pdf")
	qpdfCheck(t, pdf)

	text, err := os.ReadFile(artifact(t, out, "mixed.txt"))
	require.NoError(t, err)
	ocrPages := strings.Split(string(text), "\f")
	require.GreaterOrEqual(t, accuracy(words, ocrPages[0]), 0.98, "the turned page reads upright: %q", ocrPages[0])
	require.GreaterOrEqual(t, wordAgreement(ocrPages[0], layerText(t, pdf, 1)), 0.99)
	boxes := bboxWords(t, pdf, 1)
	require.Equal(t, words[0], boxes[0].text)
	require.InDelta(t, 72, boxes[0].x0, 4, "the first word starts an inch from the displayed left edge")
	require.InDelta(t, 72, boxes[0].y1, 6, "its baseline an inch from the displayed top")
	last := boxes[len(boxes)-1]
	require.Greater(t, last.y0, boxes[0].y1, "lines run down the displayed page")

	require.Contains(t, ocrPages[1], "Born digital page")
	layer := layerText(t, pdf, 2)
	require.Equal(t, 1, strings.Count(layer, "Born digital page"), "the page's own text, once: %q", layer)
}

// A scan protected by an owner password (it opens without one) gets its pages made
// anew from their images: still JPEG as stored, still searchable.
func TestSearchablePDFOfAnOwnerProtectedScan(t *testing.T) {
	t.Parallel()
	e := workerEngine(t)
	dir := t.TempDir()
	words := ocrtest.Text(31, 80)
	scan := filepath.Join(dir, "plain.pdf")
	require.NoError(t, os.WriteFile(scan, ocrtest.ScannedPDF(t, [][]string{ocrtest.Lines(words, 10)}, 200), 0o600))
	locked := filepath.Join(dir, "locked.pdf")
	msg, err := exec.Command("qpdf", "--encrypt", "", "owner", "256", "--", scan, locked).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	out, err := run(t, e, locked, ocr.Options{Outputs: []string{"pdf"}}, nil)
	require.NoError(t, err)
	pdf := artifact(t, out, "locked.pdf")
	qpdfCheck(t, pdf)
	require.GreaterOrEqual(t, accuracy(words, layerText(t, pdf, 1)), 0.98)
	list, err := exec.Command("pdfimages", "-list", pdf).Output()
	require.NoError(t, err)
	require.Contains(t, string(list), " jpeg ", "the scan's JPEG as stored: %s", list)
	in, _ := os.Stat(locked)
	st, _ := os.Stat(pdf)
	require.LessOrEqual(t, float64(st.Size()), 1.1*float64(in.Size()))
}

// Images other than JPEG are re-encoded for their page: CCITT G4 when black and
// white, JPEG otherwise; each page keeps a text layer of its words.
func TestSearchablePDFOfImagesPicksTheirEncoding(t *testing.T) {
	t.Parallel()
	e := engine(t)
	words := ocrtest.Text(41, 40)
	gray := ocrtest.Draw(t, ocrtest.Lines(words, 6), 1800, 900, 300)
	bilevel := image.NewGray(gray.Bounds())
	for i, v := range gray.Pix {
		if v >= 128 {
			bilevel.Pix[i] = 255
		}
	}
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		img  image.Image
		want string
	}{"gray.png": {gray, "jpeg"}, "bilevel.png": {bilevel, "ccitt"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := ocrtest.WritePNG(t, dir, name, tc.img)
			out, err := run(t, e, path, ocr.Options{Outputs: []string{"pdf"}}, nil)
			require.NoError(t, err)
			pdf := artifact(t, out, strings.TrimSuffix(name, ".png")+".pdf")
			qpdfCheck(t, pdf)
			list, err := exec.Command("pdfimages", "-list", pdf).Output()
			require.NoError(t, err)
			require.Contains(t, string(list), " 1800   900 ", "the image at full size: %s", list)
			require.Contains(t, string(list), " "+tc.want+" ", "encoded as %s: %s", tc.want, list)
			layer := layerText(t, pdf, 1)
			require.GreaterOrEqual(t, accuracy(words, layer), 0.98, "%q", layer)
		})
	}
}

// A scanned page's words, asked for one page at a time (ai-ready's pages without a
// text layer), come from its image as stored, boxed at its resolution.
func TestRecognizePageReadsAScanAsStored(t *testing.T) {
	t.Parallel()
	e, rendered := countingEngine(t)
	words := ocrtest.Text(51, 60)
	scan := filepath.Join(t.TempDir(), "scan.pdf")
	require.NoError(t, os.WriteFile(scan, ocrtest.ScannedPDF(t, [][]string{ocrtest.Lines(words, 10)}, 200), 0o600))
	wp, err := e.RecognizePage(context.Background(), scan, 1, 0)
	require.NoError(t, err)
	require.Zero(t, rendered.Load())
	require.Equal(t, []int{200, 1700, 2200}, []int{wp.DPI, wp.Width, wp.Height})
	var got []string
	for _, w := range wp.Words {
		got = append(got, w.Text)
	}
	require.GreaterOrEqual(t, accuracy(words, strings.Join(got, " ")), 0.98)
	require.InDelta(t, 200, wp.Words[0].BBox[0], 15, "boxed in the 200 dpi image: an inch from the left")
}
