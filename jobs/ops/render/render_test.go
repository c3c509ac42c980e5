package render_test

import (
	"context"
	"encoding/json"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/enginetest"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
	"github.com/filemill/filemill/jobs/ops/render"
)

var engine *render.Engine

func TestMain(m *testing.M) {
	var err error
	engine, err = render.New(render.Config{PDFium: pdfium.Config{Instances: 2,
		CompilationCacheDir: filepath.Join(os.TempDir(), "filemill-test-wazero")}})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

func run(t *testing.T, pdf []byte, opts string) (*domain.EngineOutput, []int, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	pdftest.WriteFile(in, pdf)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	var progress []int
	o, err := domain.DecodeOptions(render.Specs(), "pdf.render", json.RawMessage(opts))
	if err != nil {
		return nil, nil, err
	}
	out, err := engine.Run(context.Background(), domain.EngineInput{
		Operation: "pdf.render", Options: o, Path: in, Filename: "My Report.pdf", WorkDir: work,
		Progress: func(p int) { progress = append(progress, p) },
	})
	return out, progress, err
}

func decode(t *testing.T, path string) (image.Image, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, format, err := image.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img, format
}

func notBlank(t *testing.T, img image.Image) {
	t.Helper()
	b := img.Bounds()
	dark := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			if r, g, bb, _ := img.At(x, y).RGBA(); r < 0x8000 || g < 0x8000 || bb < 0x8000 {
				dark++
			}
		}
	}
	if dark < b.Dx()*b.Dy()/4/200 {
		t.Fatalf("image is blank: %d dark samples", dark)
	}
}

func TestRenderAtDPIAndWidth(t *testing.T) {
	cases := []struct {
		name, opts string
		pages      int
		w, h       int
		format     string
	}{
		{"Default72dpi", `{}`, 3, 612, 792, "png"},
		{"DPI150SelectedPages", `{"pages":"3,1","dpi":150,"format":"jpeg"}`, 2, 1275, 1650, "jpeg"},
		{"Width400", `{"pages":"2-","width":400,"format":"png"}`, 2, 400, 518, "png"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, progress, err := run(t, pdftest.Numbered("", 3), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Artifacts) != c.pages || out.Units != c.pages {
				t.Fatalf("%d artifacts, %d units; want %d", len(out.Artifacts), out.Units, c.pages)
			}
			if progress[len(progress)-1] != 100 || len(progress) != c.pages {
				t.Fatalf("progress = %v", progress)
			}
			for _, a := range out.Artifacts {
				if !strings.HasPrefix(a.Name, "My Report-page-") || a.MIMEType != "image/"+c.format {
					t.Fatalf("artifact %+v", a)
				}
				img, format := decode(t, a.Path)
				if format != c.format || img.Bounds().Dx() != c.w || img.Bounds().Dy() != c.h {
					t.Fatalf("%s: %s %v, want %s %dx%d", a.Name, format, img.Bounds().Size(), c.format, c.w, c.h)
				}
				notBlank(t, img)
			}
		})
	}
}

func TestRenderWebP(t *testing.T) {
	out, _, err := run(t, pdftest.Numbered("", 1), `{"format":"webp","dpi":50}`)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(out.Artifacts[0].Path)
	if string(raw[:4]) != "RIFF" || string(raw[8:12]) != "WEBP" || out.Artifacts[0].MIMEType != "image/webp" {
		t.Fatalf("not a WebP: %q", raw[:12])
	}
	// An independent decoder reads it at the size asked for.
	png := filepath.Join(t.TempDir(), "x.png")
	if b, err := exec.Command("vips", "copy", out.Artifacts[0].Path, png).CombinedOutput(); err != nil {
		t.Fatalf("vips copy (apt-get install libvips-tools): %v %s", err, b)
	}
	img, _ := decode(t, png)
	if img.Bounds().Dx() != 425 || img.Bounds().Dy() != 550 {
		t.Fatalf("webp size %v", img.Bounds().Size())
	}
}

func TestRenderErrors(t *testing.T) {
	good := pdftest.Numbered("", 2)
	dir := t.TempDir()
	plain := pdftest.WriteFile(filepath.Join(dir, "p.pdf"), good)
	enc := filepath.Join(dir, "e.pdf")
	if b, err := exec.Command("qpdf", "--encrypt", "u", "o", "256", "--", plain, enc).CombinedOutput(); err != nil {
		t.Fatalf("qpdf (apt-get install qpdf): %v %s", err, b)
	}
	encrypted, _ := os.ReadFile(enc)
	cases := []struct {
		name, opts string
		pdf        []byte
		code       string
		param      string
	}{
		{"PageBeyondEnd", `{"pages":"3"}`, good, domain.CodeInvalidRequest, "options.pages"},
		{"BadRange", `{"pages":"x"}`, good, domain.CodeInvalidRequest, "options.pages"},
		{"DPIAndWidth", `{"dpi":100,"width":100}`, good, domain.CodeInvalidRequest, "options.width"},
		{"Encrypted", `{}`, encrypted, domain.CodeEncryptedFile, ""},
		{"Truncated", `{}`, good[:len(good)/3], domain.CodeCorruptedFile, ""},
		{"TooLarge", `{"dpi":600}`, func() []byte {
			var w pdftest.Writer
			return w.Document([]pdftest.Page{{Width: 14400, Height: 14400, Content: "0 0 1 rg 0 0 10 10 re f"}})
		}(), domain.CodeUnsupportedInput, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := run(t, c.pdf, c.opts)
			var de *domain.Error
			if !asDomain(err, &de) || de.Code != c.code || de.Param != c.param {
				t.Fatalf("err = %v, want %s %s", err, c.code, c.param)
			}
		})
	}
}

func asDomain(err error, de **domain.Error) bool {
	e, ok := err.(*domain.Error)
	if ok {
		*de = e
	}
	return ok
}

func TestSpecs(t *testing.T) {
	s := render.Specs()
	if len(s) != 1 || s[0].Name != "pdf.render" || s[0].Engine != "render" || s[0].Price.Per != "page" {
		t.Fatalf("%+v", s)
	}
}

func engineOptions(tb testing.TB, op, raw string) any {
	return enginetest.Options(tb, render.Specs(), op, raw)
}
