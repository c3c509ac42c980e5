package office_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
)

func TestMain(m *testing.M) {
	for _, tool := range []string{"soffice", "/usr/bin/python3", "pdftotext", "pdfinfo", "pdftoppm", "pdfimages"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "%s is missing: apt-get install -y --no-install-recommends libreoffice-core-nogui "+
				"libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui python3-uno "+
				"fonts-dejavu-core fonts-liberation2 poppler-utils\n", tool)
			os.Exit(1)
		}
	}
	code := m.Run()
	for _, e := range []*office.Engine{shared, unconfined} {
		if e != nil {
			e.Close()
		}
	}
	os.Exit(code)
}

var (
	sharedOnce     sync.Once
	shared         *office.Engine
	unconfinedOnce sync.Once
	unconfined     *office.Engine
)

// sharedEngine is one pool of two instances for the tests that only convert.
func sharedEngine(t *testing.T) *office.Engine {
	t.Helper()
	sharedOnce.Do(func() {
		cfg := office.DefaultConfig()
		cfg.Instances = 2
		cfg.RenderPage = pdftoppm
		cfg.Sandbox = office.SandboxOn
		e, err := office.New(cfg)
		require.NoError(t, err)
		shared = e
	})
	return shared
}

func newEngine(t *testing.T, mut func(*office.Config)) *office.Engine {
	t.Helper()
	cfg := office.DefaultConfig()
	cfg.Instances = 1
	cfg.Sandbox = office.SandboxOn
	mut(&cfg)
	e, err := office.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// pdftoppm is a stand-in for the platform's renderer: poppler's rasteriser.
func pdftoppm(ctx context.Context, pdf string, page, dpi int, format, out string) error {
	if format != "png" {
		return fmt.Errorf("pdftoppm: %s output not used in tests", format)
	}
	base := strings.TrimSuffix(out, ".png")
	cmd := exec.CommandContext(ctx, "pdftoppm", "-png", "-singlefile", "-r", strconv.Itoa(dpi),
		"-f", strconv.Itoa(page), "-l", strconv.Itoa(page), pdf, base)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pdftoppm: %v: %s", err, b)
	}
	return nil
}

type result struct {
	out *domain.EngineOutput
	err error
}

func convert(t *testing.T, e *office.Engine, name string, data []byte, format string) (*domain.EngineOutput, error) {
	t.Helper()
	return convertCtx(context.Background(), t, e, name, data, format)
}

func convertCtx(ctx context.Context, t *testing.T, e *office.Engine, name string, data []byte, format string) (*domain.EngineOutput, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(in, data, 0o600))
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	raw, _ := json.Marshal(office.ConvertOptions{Format: format})
	opts, err := domain.DecodeOptions(office.Specs(), "convert", raw)
	if err != nil {
		return nil, err
	}
	head := data[:min(len(data), domain.DetectSniffBytes)]
	out, err := e.Run(ctx, domain.EngineInput{
		Operation: "convert", Options: opts, Path: in, Filename: name, Format: domain.Detect(head),
		ByteSize: int64(len(data)), WorkDir: work,
	})
	if err == nil {
		for _, a := range out.Artifacts {
			require.Equal(t, work, filepath.Dir(a.Path), "artifacts stay in the work directory")
		}
	}
	return out, err
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, domain.ErrorCode(err), "error: %v", err)
}

func pdfPages(t *testing.T, path string) int {
	t.Helper()
	out, err := exec.Command("pdfinfo", path).Output()
	require.NoError(t, err, "pdfinfo reads the PDF")
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Pages:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("pdfinfo gave no page count: %s", out)
	return 0
}

// pdfText is pdftotext's text of one page (0: all pages).
func pdfText(t *testing.T, path string, page int) string {
	t.Helper()
	args := []string{"-enc", "UTF-8"}
	if page > 0 {
		args = append(args, "-f", strconv.Itoa(page), "-l", strconv.Itoa(page))
	}
	out, err := exec.Command("pdftotext", append(args, path, "-")...).Output()
	require.NoError(t, err)
	return string(out)
}

func onlyArtifact(t *testing.T, out *domain.EngineOutput, name, mime string) string {
	t.Helper()
	require.Len(t, out.Artifacts, 1)
	a := out.Artifacts[0]
	require.Equal(t, name, a.Name)
	require.Equal(t, mime, a.MIMEType)
	return a.Path
}

func TestDOCXToPDFKeepsTextAndPages(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	pages := officetest.TextPages(3, 4)
	doc := officetest.DOCX(t, pages)
	out, err := convert(t, e, "report.docx", doc, "pdf")
	require.NoError(t, err)
	pdf := onlyArtifact(t, out, "report.pdf", "application/pdf")
	require.Equal(t, 3, pdfPages(t, pdf))
	for i, paras := range pages {
		text := pdfText(t, pdf, i+1)
		for _, p := range paras {
			for _, w := range strings.Fields(p) {
				require.Contains(t, text, w, "page %d", i+1)
			}
		}
	}
	n, ok := office.CountPages(writeTemp(t, doc), domain.Detect(doc))
	require.True(t, ok)
	require.Equal(t, 3, n)
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

func TestXLSXToPDFKeepsCells(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	rows := [][]string{{"Region", "Quarter", "Revenue"}}
	for i := range 30 {
		rows = append(rows, []string{fmt.Sprint("east", i), fmt.Sprint("q", i%4+1), fmt.Sprint(1000 + 37*i)})
	}
	out, err := convert(t, e, "sheet.xlsx", officetest.XLSX(t, rows), "pdf")
	require.NoError(t, err)
	pdf := onlyArtifact(t, out, "sheet.pdf", "application/pdf")
	n := pdfPages(t, pdf)
	require.GreaterOrEqual(t, n, 1)
	require.LessOrEqual(t, n, 3, "31 short rows fit on a page or two")
	text := pdfText(t, pdf, 0)
	for _, r := range rows {
		for _, c := range r {
			require.Contains(t, text, c)
		}
	}
}

func TestPPTXToPDFOnePagePerSlide(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	titles := []string{"Quarterly zephyr results", "Marmalade strategy", "Obsidian roadmap"}
	deck := officetest.PPTX(t, titles)
	n, ok := office.CountPages(writeTemp(t, deck), domain.Detect(deck))
	require.True(t, ok)
	require.Equal(t, 3, n)
	out, err := convert(t, e, "deck.pptx", deck, "pdf")
	require.NoError(t, err)
	pdf := onlyArtifact(t, out, "deck.pdf", "application/pdf")
	require.Equal(t, 3, pdfPages(t, pdf))
	for i, title := range titles {
		require.Contains(t, strings.Join(strings.Fields(pdfText(t, pdf, i+1)), " "), title, "slide %d", i+1)
	}
}

func TestRTFAndCSVToPDF(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	rtf := `{\rtf1\ansi{\fonttbl\f0\fswiss Helvetica;}\f0\pard Lapis {\b lazuli} paragraph.\par}`
	out, err := convert(t, e, "note.rtf", []byte(rtf), "pdf")
	require.NoError(t, err)
	text := pdfText(t, onlyArtifact(t, out, "note.pdf", "application/pdf"), 0)
	require.Contains(t, text, "Lapis lazuli paragraph.")
	require.NotContains(t, text, "rtf1", "read as RTF, not as plain text")

	out, err = convert(t, e, "rows.csv", []byte("city,population\nOslo,709000\nBergen,291000\n"), "pdf")
	require.NoError(t, err)
	text = pdfText(t, onlyArtifact(t, out, "rows.pdf", "application/pdf"), 0)
	for _, w := range []string{"Oslo", "709000", "Bergen"} {
		require.Contains(t, text, w)
	}
	require.NotContains(t, text, "Oslo,709000", "cells, not a line of text")
}

func TestEncryptedDocumentFails(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	out, err := convert(t, e, "secret.odt", officetest.EncryptedODT(t), "pdf")
	require.Nil(t, out)
	requireCode(t, err, domain.CodeEncryptedFile)
	require.NotContains(t, err.Error(), "Exception", "LibreOffice's words stay in the log")
}

func TestPasswordProtectedPDFFails(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	out, err := convert(t, e, "memo.docx", officetest.DOCX(t, [][]string{{"locked"}}), "pdf")
	require.NoError(t, err)
	locked := filepath.Join(t.TempDir(), "locked.pdf")
	b, err := exec.Command("qpdf", "--encrypt", "user", "owner", "256", "--", out.Artifacts[0].Path, locked).CombinedOutput()
	require.NoError(t, err, "qpdf (apt-get install qpdf): %s", b)
	pdf, err := os.ReadFile(locked)
	require.NoError(t, err)
	_, err = convert(t, e, "locked.pdf", pdf, "txt")
	requireCode(t, err, domain.CodeEncryptedFile)
}

func TestTruncatedDocumentFails(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	doc := officetest.DOCX(t, officetest.TextPages(2, 3))
	out, err := convert(t, e, "cut.docx", doc[:len(doc)/2], "pdf")
	require.Nil(t, out)
	requireCode(t, err, domain.CodeCorruptedFile)

	// A damaged legacy document reaches LibreOffice itself, which refuses it.
	garbage := append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 600)...)
	_, err = convert(t, e, "cut.doc", garbage, "pdf")
	requireCode(t, err, domain.CodeCorruptedFile)
}

func TestHTMLAndMarkdownToPDF(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	out, err := convert(t, e, "page.html", []byte(`<!DOCTYPE html><html><body><h1>Heliotrope heading</h1><p>Paragraph of vermilion text.</p></body></html>`), "pdf")
	require.NoError(t, err)
	text := pdfText(t, onlyArtifact(t, out, "page.pdf", "application/pdf"), 0)
	require.Contains(t, text, "Heliotrope heading")
	require.Contains(t, text, "vermilion")

	md := "# Saffron title\n\n- first cerulean item\n- second item\n\n| Col | Val |\n|---|---|\n| ochre | 42 |\n"
	out, err = convert(t, e, "notes.md", []byte(md), "pdf")
	require.NoError(t, err)
	text = pdfText(t, onlyArtifact(t, out, "notes.pdf", "application/pdf"), 0)
	for _, w := range []string{"Saffron title", "first cerulean item", "ochre", "42"} {
		require.Contains(t, text, w)
	}
	require.NotContains(t, text, "# Saffron", "Markdown is rendered, not printed")
}

func TestDocumentsNeverFetchRemoteResources(t *testing.T) {
	t.Parallel()
	e := unconfinedEngine(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		png.Encode(w, image.NewGray(image.Rect(0, 0, 4, 4)))
	}))
	defer srv.Close()
	page := fmt.Sprintf(`<html><head><link rel="stylesheet" href="%[1]s/s.css"></head><body style="background:url(%[1]s/b.png)">`+
		`<p>Remote test</p><img src="%[1]s/i.png"><iframe src="%[1]s/f.html"></iframe><script src="%[1]s/x.js"></script></body></html>`, srv.URL)
	_, err := convert(t, e, "remote.html", []byte(page), "pdf")
	require.NoError(t, err)
	_, err = convert(t, e, "remote.md", []byte(fmt.Sprintf("Text ![img](%s/md.png)\n", srv.URL)), "pdf")
	require.NoError(t, err)
	require.Zero(t, hits.Load(), "no request reached the server")

	// An office document that links an image by URL (LibreOffice with a default
	// profile fetches it) converts without reaching for it.
	out, err := convert(t, e, "linked.docx", officetest.DOCXWithLinkedImage(t, "linked image here", srv.URL+"/remote.png"), "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "linked image here")
	require.Zero(t, hits.Load(), "the linked image was not fetched")

	// The same in ODF, in Writer and in Impress (which loads linked images while
	// importing, past the referrer check that guards Writer).
	out, err = convert(t, e, "linked.odt", officetest.ODTWithLinkedImage(t, "odt linked image", srv.URL+"/odt.png"), "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "odt linked image")
	out, err = convert(t, e, "linked.odp", officetest.ODPWithLinkedImage(t, "odp linked image", srv.URL+"/odp.png"), "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "odp linked image")
	require.Zero(t, hits.Load(), "no linked image was fetched")
	require.Zero(t, pdfImages(t, out.Artifacts[0].Path), "nothing stands in for the image")
}

func TestDocumentsNeverReadLocalFilesTheyLink(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	// A real image outside the document's directory, linked by absolute file: URL.
	img := filepath.Join(t.TempDir(), "elsewhere.png")
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, image.NewGray(image.Rect(0, 0, 8, 8))))
	require.NoError(t, f.Close())
	url := "file://" + img
	for _, doc := range []struct {
		name string
		data []byte
	}{
		{"local.odt", officetest.ODTWithLinkedImage(t, "local link", url)},
		{"local.docx", officetest.DOCXWithLinkedImage(t, "local link", url)},
		// Impress embeds a linked image on import whatever the settings: only the
		// sandbox keeps the file out of its reach.
		{"local.odp", officetest.ODPWithLinkedImage(t, "local link", url)},
	} {
		out, err := convert(t, e, doc.name, doc.data, "pdf")
		require.NoError(t, err, doc.name)
		require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "local link", doc.name)
		require.Zero(t, pdfImages(t, out.Artifacts[0].Path), "%s: the linked file is not in the PDF", doc.name)
	}
}

// pdfImages counts the images a PDF draws (pdfimages -list: two header lines, then
// one line an image).
func pdfImages(t *testing.T, path string) int {
	t.Helper()
	out, err := exec.Command("pdfimages", "-list", path).Output()
	require.NoError(t, err, "pdfimages reads the PDF")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.GreaterOrEqual(t, len(lines), 2, "pdfimages -list: %s", out)
	return len(lines) - 2
}

// Each confined instance sees one document at a time: its exchange directory is
// empty after every conversion, whether it worked or not, so the next document on the
// instance (another organization's, perhaps) cannot link the previous one.
func TestSandboxExchangeIsEmptiedAfterEachConversion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e := newEngine(t, func(c *office.Config) { c.ProfileDir = root })
	exchange := filepath.Join(root, "exchange-0")
	requireEmpty := func(after string) {
		t.Helper()
		entries, err := os.ReadDir(exchange)
		require.NoError(t, err, "the confined instance has an exchange directory")
		require.Empty(t, entries, "after %s", after)
	}
	out, err := convert(t, e, "first.docx", officetest.DOCX(t, [][]string{{"first document"}}), "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "first document")
	requireEmpty("a conversion")

	doc := officetest.DOCX(t, officetest.TextPages(2, 3))
	_, err = convert(t, e, "cut.docx", doc[:len(doc)/2], "pdf")
	requireCode(t, err, domain.CodeCorruptedFile)
	garbage := append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 600)...)
	_, err = convert(t, e, "cut.doc", garbage, "pdf")
	requireCode(t, err, domain.CodeCorruptedFile)
	requireEmpty("refused documents")
}

// The exchange directory may live on another filesystem than the job's scratch space
// (profiles on a tmpfs, say): the input is then copied in and the result copied out,
// where a link and a rename cannot cross.
func TestSandboxExchangeOnAnotherFilesystem(t *testing.T) {
	t.Parallel()
	root, err := os.MkdirTemp("/dev/shm", "filemill-office-test-")
	require.NoError(t, err, "/dev/shm (a tmpfs) holds the profiles")
	t.Cleanup(func() { os.RemoveAll(root) })
	var shm, tmp syscall.Stat_t
	require.NoError(t, syscall.Stat(root, &shm))
	require.NoError(t, syscall.Stat(t.TempDir(), &tmp))
	require.NotEqual(t, tmp.Dev, shm.Dev, "the profiles are on another filesystem than the scratch space")
	e := newEngine(t, func(c *office.Config) { c.ProfileDir = root })
	out, err := convert(t, e, "across.docx", officetest.DOCX(t, [][]string{{"across filesystems"}}), "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "across filesystems")
	entries, err := os.ReadDir(filepath.Join(root, "exchange-0"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

// A required sandbox that cannot start converts nothing, and says why.
func TestRequiredSandboxWithoutBubblewrapConvertsNothing(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *office.Config) { c.Bwrap = filepath.Join(t.TempDir(), "no-bwrap") })
	_, err := convert(t, e, "memo.docx", officetest.DOCX(t, [][]string{{"memo"}}), "pdf")
	require.Error(t, err)
	require.Contains(t, err.Error(), "sandbox is required")
	require.Error(t, e.Check(context.Background()), "readiness reports it too")
}

// unconfinedEngine is an engine whose instances run outside the sandbox: the tests of
// the profile's and the load's own defences use it, so that they prove those layers
// alone (the sandbox has neither the network nor the test's files, and would hide a
// macro that ran or a fetch that was tried).
func unconfinedEngine(t *testing.T) *office.Engine {
	t.Helper()
	unconfinedOnce.Do(func() {
		cfg := office.DefaultConfig()
		cfg.Instances = 1
		cfg.Sandbox = office.SandboxOff
		e, err := office.New(cfg)
		require.NoError(t, err)
		unconfined = e
	})
	return unconfined
}

// Macros never run in Writer or Impress documents, and the documents still convert.
func TestMacrosNeverRun(t *testing.T) {
	t.Parallel()
	e := unconfinedEngine(t)
	for _, kind := range []string{officetest.MacroText, officetest.MacroPresentation} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			hit := make(chan struct{}, 1)
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				select {
				case hit <- struct{}{}:
				default:
				}
			}))
			defer srv.Close()
			dir := t.TempDir()
			marker := filepath.Join(dir, "macro-ran")
			text := "macro document " + kind
			doc := officetest.OpenMacroDocument(t, kind, text, marker, srv.URL+"/macro")

			out, err := convert(t, e, "macro."+kind, doc, "pdf")
			require.NoError(t, err)
			require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), text)
			_, err = os.Stat(marker)
			require.ErrorIs(t, err, os.ErrNotExist, "the macro did not write its marker")
			require.Zero(t, hits.Load(), "the macro made no request")

			// Control: the same document in an office that allows macros runs the
			// macro, so the assertions above are about the engine, not a dead document.
			path := filepath.Join(dir, "macro."+kind)
			require.NoError(t, os.WriteFile(path, doc, 0o600))
			// A bound for a control whose macro does not end the office, not a timing.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			officetest.OpenAllowingMacros(ctx, t, path)
			b, err := os.ReadFile(marker)
			require.NoError(t, err, "the control ran the macro")
			require.Equal(t, "ran", strings.TrimSpace(string(b)))
			select {
			case <-hit:
			default:
				t.Fatal("the control's macro reached the listener")
			}
		})
	}
}

func TestImageToPDF(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	img := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for y := range 200 {
		for x := range 300 {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	var buf strings.Builder
	require.NoError(t, png.Encode(&buf, img))
	out, err := convert(t, e, "photo.png", []byte(buf.String()), "pdf")
	require.NoError(t, err)
	pdf := onlyArtifact(t, out, "photo.pdf", "application/pdf")
	require.Equal(t, 1, pdfPages(t, pdf))
	info, err := exec.Command("pdfinfo", pdf).Output()
	require.NoError(t, err)
	require.Contains(t, string(info), "300 x 200 pts", "the page takes the image's size")
}

// A photo of a page, as a phone stores it (turned or mirrored, with the EXIF orientation
// that shows it upright), converts to an upright page of its displayed size; a JPEG is
// embedded as it came. PNG and WebP carry the same tag and are decoded upright.
func TestImageToPDFAppliesTheEXIFOrientation(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	const w, h = 240, 160
	upright := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h { // quadrants of four grays: any turn or mirror shows
		for x := range w {
			upright.Pix[y*upright.Stride+x] = uint8(70*(x*2/w) + 140*(y*2/h))
		}
	}
	check := func(t *testing.T, pdf string) {
		t.Helper()
		info, err := exec.Command("pdfinfo", pdf).Output()
		require.NoError(t, err)
		require.Contains(t, string(info), fmt.Sprintf("%d x %d pts", w, h), "the page has the displayed size")
		base := strings.TrimSuffix(pdf, ".pdf") + "-page"
		msg, err := exec.Command("pdftoppm", "-gray", "-r", "72", "-singlefile", "-png", pdf, base).CombinedOutput()
		require.NoError(t, err, "%s", msg)
		f, err := os.Open(base + ".png")
		require.NoError(t, err)
		defer f.Close()
		got, err := png.Decode(f)
		require.NoError(t, err)
		for _, p := range []image.Point{{w / 4, h / 4}, {3 * w / 4, h / 4}, {w / 4, 3 * h / 4}, {3 * w / 4, 3 * h / 4}} {
			g, _, _, _ := got.At(p.X, p.Y).RGBA()
			require.InDelta(t, int(upright.GrayAt(p.X, p.Y).Y), int(g>>8), 12, "quadrant at %v is where the viewer shows it", p)
		}
	}
	for o := 1; o <= 8; o++ {
		t.Run(fmt.Sprintf("JPEGOrientation%d", o), func(t *testing.T) {
			t.Parallel()
			data := ocrtest.OrientedJPEG(t, upright, o)
			out, err := convert(t, e, "photo.jpg", data, "pdf")
			require.NoError(t, err)
			pdf := onlyArtifact(t, out, "photo.pdf", "application/pdf")
			check(t, pdf)
			b, err := os.ReadFile(pdf)
			require.NoError(t, err)
			require.True(t, bytes.Contains(b, data), "the JPEG is embedded as it came")
		})
	}
	for _, ext := range []string{"png", "webp"} {
		t.Run(strings.ToUpper(ext)+"Orientation6", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			jpg := filepath.Join(dir, "photo.jpg")
			require.NoError(t, os.WriteFile(jpg, ocrtest.OrientedJPEG(t, upright, 6), 0o600))
			other := filepath.Join(dir, "photo."+ext)
			// libvips copies the EXIF block, orientation included, into PNG and WebP.
			msg, err := exec.Command("vips", "copy", jpg, other).CombinedOutput()
			require.NoError(t, err, "vips (apt-get install libvips-tools): %s", msg)
			data, err := os.ReadFile(other)
			require.NoError(t, err)
			out, err := convert(t, e, "photo."+ext, data, "pdf")
			require.NoError(t, err)
			check(t, onlyArtifact(t, out, "photo.pdf", "application/pdf"))
		})
	}
}

func TestTextOutputs(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	pages := officetest.TextPages(2, 2)
	out, err := convert(t, e, "memo.docx", officetest.DOCX(t, pages), "txt")
	require.NoError(t, err)
	b, err := os.ReadFile(onlyArtifact(t, out, "memo.txt", "text/plain; charset=utf-8"))
	require.NoError(t, err)
	require.NotEqual(t, "\xef\xbb\xbf", string(b[:3]), "no byte order mark")
	for _, p := range pages {
		for _, para := range p {
			require.Contains(t, string(b), para)
		}
	}

	rows := [][]string{{"Tungsten", "Molybdenum"}, {"Vanadium", "Niobium"}}
	out, err = convert(t, e, "metals.xlsx", officetest.XLSX(t, rows), "txt")
	require.NoError(t, err)
	b, err = os.ReadFile(onlyArtifact(t, out, "metals.txt", "text/plain; charset=utf-8"))
	require.NoError(t, err)
	for _, w := range []string{"Tungsten", "Molybdenum", "Vanadium", "Niobium"} {
		require.Contains(t, string(b), w)
	}

	// PDF → text through pdftotext.
	out, err = convert(t, e, "memo.docx", officetest.DOCX(t, pages), "pdf")
	require.NoError(t, err)
	pdf, err := os.ReadFile(out.Artifacts[0].Path)
	require.NoError(t, err)
	out, err = convert(t, e, "memo.pdf", pdf, "txt")
	require.NoError(t, err)
	b, err = os.ReadFile(onlyArtifact(t, out, "memo.txt", "text/plain; charset=utf-8"))
	require.NoError(t, err)
	text := string(b)
	require.Equal(t, 1, strings.Count(text, "\f")-boolInt(strings.HasSuffix(strings.TrimRight(text, "\n"), "\f")), "one page break between two pages")
	require.Less(t, strings.Index(text, pages[0][0][:10]), strings.Index(text, pages[1][0][:10]), "pages in order")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestMarkdownOutput(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	out, err := convert(t, e, "doc.html", []byte(`<html><body><h2>Garnet section</h2><ul><li>topaz</li><li>beryl</li></ul>`+
		`<table><tr><th>Stone</th><th>Hardness</th></tr><tr><td>quartz</td><td>7</td></tr></table></body></html>`), "md")
	require.NoError(t, err)
	b, err := os.ReadFile(onlyArtifact(t, out, "doc.md", "text/markdown; charset=utf-8"))
	require.NoError(t, err)
	md := string(b)
	require.Contains(t, md, "## Garnet section")
	require.Contains(t, md, "- topaz")
	require.Regexp(t, `\|\s*quartz\s*\|\s*7\s*\|`, md)

	out, err = convert(t, e, "memo.docx", officetest.DOCX(t, [][]string{{"Amber paragraph one.", "Jade paragraph two."}}), "md")
	require.NoError(t, err)
	b, err = os.ReadFile(onlyArtifact(t, out, "memo.md", "text/markdown; charset=utf-8"))
	require.NoError(t, err)
	require.Contains(t, string(b), "Amber paragraph one.")
	require.Contains(t, string(b), "Jade paragraph two.")

	rows := [][]string{{"Metal", "Symbol"}, {"Iron", "Fe"}}
	out, err = convert(t, e, "m.xlsx", officetest.XLSX(t, rows), "md")
	require.NoError(t, err)
	b, err = os.ReadFile(out.Artifacts[0].Path)
	require.NoError(t, err)
	// The sheet's first row is the table's header, not a data row under an empty one.
	require.Equal(t, "# Data\n\n| Metal | Symbol |\n| --- | --- |\n| Iron | Fe |\n", string(b))

	out, err = convert(t, e, "deck.pptx", officetest.PPTX(t, []string{"Quartz opening", "Basalt closing"}), "md")
	require.NoError(t, err)
	b, err = os.ReadFile(onlyArtifact(t, out, "deck.md", "text/markdown; charset=utf-8"))
	require.NoError(t, err)
	md = string(b)
	i, j := strings.Index(md, "<!-- Slide 1 -->"), strings.Index(md, "<!-- Slide 2 -->")
	require.True(t, i >= 0 && j > i, md)
	require.Contains(t, md[i:j], "Quartz opening")
	require.Contains(t, md[j:], "Basalt closing")
}

func TestImageOutputThroughTheRenderer(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	out, err := convert(t, e, "two.docx", officetest.DOCX(t, officetest.TextPages(2, 2)), "png")
	require.NoError(t, err)
	require.Len(t, out.Artifacts, 2)
	for i, a := range out.Artifacts {
		require.Equal(t, fmt.Sprintf("two-%d.png", i+1), a.Name)
		require.Equal(t, "image/png", a.MIMEType)
		f, err := os.Open(a.Path)
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err)
		require.InDelta(t, 8.5*150, cfg.Width, 2, "a Letter page at 150 dpi")
	}

	noRenderer := newEngine(t, func(c *office.Config) {})
	_, err = convert(t, noRenderer, "two.docx", officetest.DOCX(t, officetest.TextPages(1, 1)), "png")
	requireCode(t, err, domain.CodeUnsupportedInput)
}

func TestUnsupportedPairs(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	var buf strings.Builder
	require.NoError(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))))
	_, err := convert(t, e, "a.png", []byte(buf.String()), "txt")
	requireCode(t, err, domain.CodeUnsupportedInput)
	_, err = convert(t, e, "a.bin", []byte{0, 1, 2, 3, 4, 5, 0, 0}, "pdf")
	requireCode(t, err, domain.CodeUnsupportedInput)
	_, err = convert(t, e, "a.docx", officetest.DOCX(t, [][]string{{"x"}}), "gif")
	requireCode(t, err, domain.CodeInvalidRequest)
}

// officeProcesses finds the soffice.bin processes of an instance's process group
// (LibreOffice restarts itself once after creating a profile, so there may be two).
func officeProcesses(t *testing.T, pgid int) []int {
	t.Helper()
	var out []int
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if g, _ := strconv.Atoi(f[2]); g == pgid && f[0] != "Z" && strings.Contains(s, "(soffice.bin)") {
			out = append(out, pid)
		}
	}
	return out
}

func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if g, _ := strconv.Atoi(f[2]); g == pgid && f[0] != "Z" {
			return true
		}
	}
	return false
}

var waitFor = eventually.True

// bigDOCX is long enough that converting it takes LibreOffice many seconds (2000
// pages: about 7 s on one core; 8000 about half a minute).
func bigDOCX(t *testing.T, pages int) []byte {
	return officetest.DOCX(t, officetest.TextPages(pages, 6))
}

// crashBusy kills the LibreOffice processes of the instance running a conversion
// once it is not the instance in group not (0: any), and returns its group.
func crashBusy(t *testing.T, e *office.Engine, not int) int {
	t.Helper()
	var pgid int
	waitFor(t, "a conversion to start", func() bool {
		st := e.Instances()[0]
		pgid = st.PID
		return st.Busy && st.Running && st.PID != not && len(officeProcesses(t, st.PID)) > 0
	})
	for _, pid := range officeProcesses(t, pgid) {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL)) // LibreOffice crashes
	}
	return pgid
}

// A crash may be the instance's, worn by the documents before: the conversion is tried
// again on another instance, and succeeds there.
func TestInstanceKilledMidConversionIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *office.Config) {})
	small := officetest.DOCX(t, [][]string{{"warm up"}})
	_, err := convert(t, e, "warm.docx", small, "pdf")
	require.NoError(t, err)
	pgid := e.Instances()[0].PID
	require.NotEmpty(t, officeProcesses(t, pgid), "the instance runs a soffice.bin in its group")

	res := make(chan result, 1)
	go func() {
		out, err := convert(t, e, "big.docx", bigDOCX(t, 2000), "pdf")
		res <- result{out, err}
	}()
	require.Equal(t, pgid, crashBusy(t, e, 0), "the warm instance took the conversion")
	r := <-res
	require.NoError(t, r.err, "tried again on a replacement: %+v", e.Instances())
	require.Len(t, r.out.Artifacts, 1)
	waitFor(t, "the group to be gone", func() bool { return !groupAlive(pgid) })
	st := e.Instances()[0]
	require.NotEqual(t, pgid, st.PID)
	require.Equal(t, 1, st.Restarts)

	out, err := convert(t, e, "again.docx", small, "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "warm up")
}

// A document that crashes a second instance as well is the document's fault: it fails
// corrupted_file, which the job does not retry.
func TestDocumentThatCrashesLibreOfficeTwiceIsCorrupted(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *office.Config) {})
	_, err := convert(t, e, "warm.docx", officetest.DOCX(t, [][]string{{"warm up"}}), "pdf")
	require.NoError(t, err)

	res := make(chan result, 1)
	go func() {
		out, err := convert(t, e, "big.docx", bigDOCX(t, 2000), "pdf")
		res <- result{out, err}
	}()
	first := crashBusy(t, e, 0)
	crashBusy(t, e, first)
	r := <-res
	requireCode(t, r.err, domain.CodeCorruptedFile)
	require.False(t, domain.Retryable(r.err))
}

func TestHangingConversionIsKilledAtItsDeadline(t *testing.T) {
	t.Parallel()
	// The timeout leaves room for a first conversion on a busy machine, and is far
	// below what the big document needs.
	const timeout = 8 * time.Second
	e := newEngine(t, func(c *office.Config) { c.Timeout = timeout })
	small := officetest.DOCX(t, [][]string{{"before"}})
	_, err := convert(t, e, "warm.docx", small, "pdf")
	require.NoError(t, err)
	pgid := e.Instances()[0].PID
	require.NotEmpty(t, officeProcesses(t, pgid))

	start := time.Now()
	_, err = convert(t, e, "big.docx", bigDOCX(t, 8000), "pdf")
	requireCode(t, err, domain.CodeTimeout)
	require.Less(t, time.Since(start), timeout+15*time.Second, "the run ends at its deadline, not when LibreOffice finishes")
	// The whole group got SIGKILL at the deadline; a process that large takes a moment
	// to be torn down. Ten seconds is far more than that, and far less than the rest
	// of the conversion a surviving LibreOffice would go on with.
	_, err = eventually.Wait(10*time.Second, func() (struct{}, bool) { return struct{}{}, !groupAlive(pgid) })
	require.NoError(t, err, "the helper and LibreOffice are gone together")

	out, err := convert(t, e, "after.docx", officetest.DOCX(t, [][]string{{"after"}}), "pdf")
	require.NoError(t, err)
	require.Contains(t, pdfText(t, out.Artifacts[0].Path, 0), "after")
}

func TestTwentyConversionsThroughTwoInstances(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *office.Config) { c.Instances = 2; c.ConversionsPerInstance = 7 })
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			words := officetest.Words(i, 5)
			out, err := convert(t, e, fmt.Sprintf("d%d.docx", i), officetest.DOCX(t, [][]string{{strings.Join(words, " ")}}), "pdf")
			if err != nil {
				errs <- fmt.Errorf("conversion %d: %w", i, err)
				return
			}
			text := pdfText(t, out.Artifacts[0].Path, 0)
			for _, w := range words {
				if !strings.Contains(text, w) {
					errs <- fmt.Errorf("conversion %d: %q missing from %q", i, w, text)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	restarts := 0
	for _, st := range e.Instances() {
		restarts += st.Restarts
	}
	require.GreaterOrEqual(t, restarts, 2, "instances were recycled after 7 conversions each")
}

func TestCheckAndVersion(t *testing.T) {
	t.Parallel()
	e := sharedEngine(t)
	require.NoError(t, e.Check(context.Background()))
	require.Regexp(t, `^LibreOffice \d+\.\d+`, e.Version())
	broken := newEngine(t, func(c *office.Config) { c.Soffice = "/nonexistent/soffice" })
	require.Error(t, broken.Check(context.Background()))
}

func TestSpecs(t *testing.T) {
	specs := office.Specs()
	require.Len(t, specs, 1)
	require.Equal(t, "convert", specs[0].Name)
	require.Equal(t, "office", specs[0].Engine)
	require.IsType(t, office.ConvertOptions{}, specs[0].Options)
}
