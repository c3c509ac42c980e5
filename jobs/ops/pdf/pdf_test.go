package pdf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

func newEngine(t *testing.T, cfg pdf.Config) *pdf.Engine {
	t.Helper()
	e, err := pdf.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func tool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s\n(install with: apt-get install -y poppler-utils qpdf)", name, args, err, out)
	}
	return string(out)
}

// pageLabels reads each page's big label ("A Page 2") with poppler's pdftotext.
func pageLabels(t *testing.T, path string) []string {
	t.Helper()
	text := tool(t, "pdftotext", "-layout", path, "-")
	var labels []string
	for _, page := range strings.Split(strings.TrimRight(text, "\f\n"), "\f") {
		first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(page), "\n", 2)[0])
		labels = append(labels, first)
	}
	return labels
}

var rotRE = regexp.MustCompile(`Page\s+(\d+) rot:\s+(\d+)`)

// rotations reads each page's rotation with pdfinfo.
func rotations(t *testing.T, path string, n int) []int {
	t.Helper()
	out := tool(t, "pdfinfo", "-f", "1", "-l", strconv.Itoa(n), path)
	var rots []int
	for _, m := range rotRE.FindAllStringSubmatch(out, -1) {
		r, _ := strconv.Atoi(m[2])
		rots = append(rots, r)
	}
	return rots
}

type run struct {
	t    *testing.T
	e    *pdf.Engine
	dir  string
	prog []int
}

func setup(t *testing.T) *run {
	return &run{t: t, e: newEngine(t, pdf.Config{}), dir: t.TempDir()}
}

func (r *run) file(name string, data []byte) string {
	return pdftest.WriteFile(filepath.Join(r.dir, name), data)
}

func (r *run) do(op, opts, path string, inputs ...string) (*domain.EngineOutput, error) {
	work, err := os.MkdirTemp(r.dir, "work")
	if err != nil {
		r.t.Fatal(err)
	}
	o, err := domain.DecodeOptions(pdf.Specs(), op, json.RawMessage(opts))
	if err != nil {
		return nil, err
	}
	in := domain.EngineInput{Operation: op, Options: o, Path: path, Filename: "report.pdf", WorkDir: work,
		Progress: func(p int) { r.prog = append(r.prog, p) }}
	for i, p := range inputs {
		in.Inputs = append(in.Inputs, domain.EngineFile{FileID: fmt.Sprintf("file_%d", i), Path: p})
	}
	return r.e.Run(context.Background(), in)
}

func (r *run) ok(op, opts, path string, inputs ...string) *domain.EngineOutput {
	r.t.Helper()
	out, err := r.do(op, opts, path, inputs...)
	if err != nil {
		r.t.Fatalf("%s %s: %v", op, opts, err)
	}
	for _, a := range out.Artifacts {
		if a.MIMEType == "application/pdf" {
			tool(r.t, "qpdf", "--check", a.Path)
		}
	}
	return out
}

func labels(prefix string, pages ...int) []string {
	var out []string
	for _, p := range pages {
		out = append(out, fmt.Sprintf("%sPage %d", prefix, p))
	}
	return out
}

func TestMergeOrderAndCount(t *testing.T) {
	r := setup(t)
	a := r.file("a.pdf", pdftest.Numbered("A ", 2))
	b := r.file("b.pdf", pdftest.Numbered("B ", 3))
	c := r.file("c.pdf", pdftest.Numbered("C ", 1))
	out := r.ok("pdf.merge", `{"file_ids":["file_b","file_c"]}`, a, b, c)
	if len(out.Artifacts) != 1 || out.Artifacts[0].Name != "report-merged.pdf" {
		t.Fatalf("artifacts = %+v", out.Artifacts)
	}
	got := pageLabels(t, out.Artifacts[0].Path)
	want := append(append(labels("A ", 1, 2), labels("B ", 1, 2, 3)...), labels("C ", 1)...)
	if !slices.Equal(got, want) {
		t.Fatalf("pages = %q, want %q", got, want)
	}
	if n, err := pdf.CountPages(context.Background(), out.Artifacts[0].Path); err != nil || n != 6 {
		t.Fatalf("CountPages = %d, %v", n, err)
	}
	if r.prog[len(r.prog)-1] < 50 {
		t.Fatalf("progress = %v", r.prog)
	}
}

func TestPagesSelectReorderDelete(t *testing.T) {
	r := setup(t)
	in := r.file("in.pdf", pdftest.Numbered("", 5))
	cases := []struct {
		opts string
		want []int
	}{
		{`{"pages":"5,1-2"}`, []int{5, 1, 2}},
		{`{"pages":"3-"}`, []int{3, 4, 5}},
		{`{"pages":"4-2"}`, []int{4, 3, 2}},
		{`{"delete":"2,4"}`, []int{1, 3, 5}},
		{`{"pages":"5,1-3","delete":"1"}`, []int{5, 2, 3}},
	}
	for _, c := range cases {
		out := r.ok("pdf.pages", c.opts, in)
		if got := pageLabels(t, out.Artifacts[0].Path); !slices.Equal(got, labels("", c.want...)) {
			t.Fatalf("%s: pages %q, want %v", c.opts, got, c.want)
		}
	}
}

func TestPagesRotate(t *testing.T) {
	r := setup(t)
	in := r.file("in.pdf", pdftest.Numbered("", 4))
	out := r.ok("pdf.pages", `{"rotate":[{"pages":"1,3","angle":90},{"pages":"2","angle":180},{"pages":"4","angle":270}]}`, in)
	if got := rotations(t, out.Artifacts[0].Path, 4); !slices.Equal(got, []int{90, 180, 90, 270}) {
		t.Fatalf("rotations = %v", got)
	}
	// Rotation with a reordering: angles follow their pages.
	out = r.ok("pdf.pages", `{"pages":"2,1","rotate":[{"pages":"1","angle":270}]}`, in)
	if got := rotations(t, out.Artifacts[0].Path, 2); !slices.Equal(got, []int{0, 270}) {
		t.Fatalf("rotations after reorder = %v", got)
	}
	if got := pageLabels(t, out.Artifacts[0].Path); !slices.Equal(got, labels("", 2, 1)) {
		t.Fatalf("pages = %q", got)
	}
}

func TestSplit(t *testing.T) {
	r := setup(t)
	in := r.file("in.pdf", pdftest.Numbered("", 5))
	cases := []struct {
		opts string
		want [][]int
	}{
		{`{"ranges":["1-2","4-","3"]}`, [][]int{{1, 2}, {4, 5}, {3}}},
		{`{"every":2}`, [][]int{{1, 2}, {3, 4}, {5}}},
		{`{"every":5}`, [][]int{{1, 2, 3, 4, 5}}},
	}
	for _, c := range cases {
		out := r.ok("pdf.split", c.opts, in)
		if len(out.Artifacts) != len(c.want) {
			t.Fatalf("%s: %d parts, want %d", c.opts, len(out.Artifacts), len(c.want))
		}
		for i, a := range out.Artifacts {
			if a.Name != fmt.Sprintf("report-part-%d.pdf", i+1) {
				t.Fatalf("name %s", a.Name)
			}
			if got := pageLabels(t, a.Path); !slices.Equal(got, labels("", c.want[i]...)) {
				t.Fatalf("%s part %d: %q, want %v", c.opts, i+1, got, c.want[i])
			}
		}
	}
}

func TestCompressImageHeavy(t *testing.T) {
	r := setup(t)
	in := r.file("photos.pdf", pdftest.ImageHeavy(3, 2400))
	before, _ := os.Stat(in)
	out := r.ok("pdf.compress", `{"level":"medium"}`, in)
	if len(out.Artifacts) != 2 || out.Artifacts[1].Name != pdf.ReportName {
		t.Fatalf("artifacts = %+v", out.Artifacts)
	}
	after, _ := os.Stat(out.Artifacts[0].Path)
	var rep pdf.CompressReport
	raw, _ := os.ReadFile(out.Artifacts[1].Path)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.BytesBefore != before.Size() || rep.BytesAfter != after.Size() || !rep.Gained || rep.Images != 3 || rep.ImagesRecompressed != 3 {
		t.Fatalf("report %+v; sizes %d → %d", rep, before.Size(), after.Size())
	}
	// 2400 px over 7.5 in is 320 dpi; at 150 dpi with quality 70 a photo keeps about a tenth.
	if after.Size()*4 > before.Size() {
		t.Fatalf("compressed %d → %d bytes: not smaller enough", before.Size(), after.Size())
	}
	if n, err := pdf.CountPages(context.Background(), out.Artifacts[0].Path); err != nil || n != 3 {
		t.Fatalf("pages = %d, %v", n, err)
	}
	// The images are still there, at the level's resolution: pdfimages lists them.
	list := tool(t, "pdfimages", "-list", out.Artifacts[0].Path)
	if strings.Count(list, "jpeg") != 3 || !strings.Contains(list, " 1125 ") {
		t.Fatalf("pdfimages -list:\n%s", list)
	}
	// The pages still look the same: poppler renders both alike.
	if d := meanDiff(t, in, out.Artifacts[0].Path); d > 6 {
		t.Fatalf("compressed page differs from the original by %.1f/255 on average", d)
	}
	low := r.ok("pdf.compress", `{"level":"low"}`, in)
	high := r.ok("pdf.compress", `{"level":"high"}`, in)
	sl, _ := os.Stat(low.Artifacts[0].Path)
	sh, _ := os.Stat(high.Artifacts[0].Path)
	if !(sh.Size() < after.Size() && after.Size() < sl.Size()) {
		t.Fatalf("levels do not order: high %d, medium %d, low %d", sh.Size(), after.Size(), sl.Size())
	}
}

// meanDiff renders page 1 of both files in gray at 20 dpi and returns the mean
// absolute difference of their pixels.
func meanDiff(t *testing.T, a, b string) float64 {
	t.Helper()
	pix := func(path string) []byte {
		out := filepath.Join(t.TempDir(), "p")
		tool(t, "pdftoppm", "-r", "20", "-gray", "-f", "1", "-l", "1", "-singlefile", path, out)
		raw, err := os.ReadFile(out + ".pgm")
		if err != nil {
			t.Fatal(err)
		}
		// P5\n<w> <h>\n255\n<pixels>
		fields := 0
		for i := range raw {
			if raw[i] == '\n' || raw[i] == ' ' {
				if fields++; fields == 4 {
					return raw[i+1:]
				}
			}
		}
		t.Fatalf("bad PGM from pdftoppm")
		return nil
	}
	pa, pb := pix(a), pix(b)
	if len(pa) != len(pb) || len(pa) == 0 {
		t.Fatalf("renders differ in size: %d vs %d", len(pa), len(pb))
	}
	sum := 0
	for i := range pa {
		d := int(pa[i]) - int(pb[i])
		sum += max(d, -d)
	}
	return float64(sum) / float64(len(pa))
}

func TestCompressNeverLarger(t *testing.T) {
	r := setup(t)
	in := r.file("photos.pdf", pdftest.ImageHeavy(1, 600))
	first := r.ok("pdf.compress", `{"level":"low"}`, in)
	// Compressing the result again gains nothing: the output is the input's bytes.
	second := r.ok("pdf.compress", `{"level":"low"}`, first.Artifacts[0].Path)
	a, _ := os.ReadFile(first.Artifacts[0].Path)
	b, _ := os.ReadFile(second.Artifacts[0].Path)
	var rep pdf.CompressReport
	raw, _ := os.ReadFile(second.Artifacts[1].Path)
	_ = json.Unmarshal(raw, &rep)
	if len(b) > len(a) {
		t.Fatalf("grew %d → %d", len(a), len(b))
	}
	if !rep.Gained && string(a) != string(b) {
		t.Fatalf("report says nothing gained but the bytes differ")
	}
	if rep.Gained == (len(b) == len(a)) || rep.BytesAfter != int64(len(b)) {
		t.Fatalf("report %+v for %d → %d", rep, len(a), len(b))
	}
}

func TestCompressTextOnly(t *testing.T) {
	r := setup(t)
	in := r.file("text.pdf", pdftest.Numbered("", 20))
	out := r.ok("pdf.compress", `{}`, in)
	before, _ := os.Stat(in)
	after, _ := os.Stat(out.Artifacts[0].Path)
	if after.Size() >= before.Size() {
		t.Fatalf("uncompressed content streams not deflated: %d → %d", before.Size(), after.Size())
	}
	if got := pageLabels(t, out.Artifacts[0].Path); !slices.Equal(got[:2], labels("", 1, 2)) || len(got) != 20 {
		t.Fatalf("text lost: %q", got)
	}
}

func loopPDF() []byte {
	var w pdftest.Writer
	w.Add("<</Type/Catalog/Pages 2 0 R>>")
	w.Add("<</Type/Pages/Kids[3 0 R 2 0 R]/Count 2>>")
	w.Add("<</Type/Page/Parent 2 0 R/MediaBox[0 0 100 100]>>")
	return w.Bytes(1)
}

func lyingCountPDF() []byte {
	var w pdftest.Writer
	w.Add("<</Type/Catalog/Pages 2 0 R>>")
	w.Add("<</Type/Pages/Kids[3 0 R]/Count 1000000000>>")
	w.Add("<</Type/Page/Parent 2 0 R/MediaBox[0 0 100 100]>>")
	return w.Bytes(1)
}

func TestBadInputs(t *testing.T) {
	r := setup(t)
	good := pdftest.Numbered("", 3)
	plain := r.file("plain.pdf", good)
	enc := filepath.Join(r.dir, "enc.pdf")
	tool(t, "qpdf", "--encrypt", "user", "owner", "256", "--", plain, enc)
	truncated := r.file("trunc.pdf", good[:len(good)/2])
	loop := r.file("loop.pdf", loopPDF())
	lying := r.file("lying.pdf", lyingCountPDF())
	notPDF := r.file("x.pdf", []byte("just some text, not a PDF at all"))
	ops := map[string]string{
		"pdf.pages":    `{"pages":"1"}`,
		"pdf.split":    `{"every":1}`,
		"pdf.compress": `{}`,
		"pdf.merge":    `{"file_ids":["file_0"]}`,
	}
	cases := []struct {
		name, path, code string
	}{
		{"Encrypted", enc, domain.CodeEncryptedFile},
		{"Truncated", truncated, domain.CodeCorruptedFile},
		{"PageTreeLoop", loop, domain.CodeCorruptedFile},
		{"LyingCount", lying, domain.CodeCorruptedFile},
		{"NotAPDF", notPDF, domain.CodeCorruptedFile},
	}
	for _, c := range cases {
		for op, opts := range ops {
			t.Run(c.name+"/"+op, func(t *testing.T) {
				_, err := r.do(op, opts, c.path, plain)
				if got := domain.ErrorCode(err); got != c.code {
					t.Fatalf("code = %s (%v), want %s", got, err, c.code)
				}
			})
		}
	}
	// A bad further input of a merge names its place in file_ids.
	_, err := r.do("pdf.merge", `{"file_ids":["file_0","file_1"]}`, plain, plain, enc)
	var de *domain.Error
	if e, ok := err.(*domain.Error); ok {
		de = e
	}
	if de == nil || de.Code != domain.CodeEncryptedFile || de.Param != "options.file_ids[1]" {
		t.Fatalf("merge with an encrypted second input: %v", err)
	}
}

func TestHugeStreamRefused(t *testing.T) {
	r := setup(t)
	r.e = newEngine(t, pdf.Config{MaxStreamBytes: 1 << 20})
	var w pdftest.Writer
	big := strings.Repeat("0 0 1 1 re f\n", 200_000) // 2.6 MB of content
	in := r.file("big.pdf", w.Document([]pdftest.Page{{Width: 100, Height: 100, Content: big}}))
	_, err := r.do("pdf.compress", `{}`, in)
	if got := domain.ErrorCode(err); got != domain.CodeUnsupportedInput && got != domain.CodeCorruptedFile {
		t.Fatalf("code = %s (%v), want a refusal", got, err)
	}
}

func TestOptionErrors(t *testing.T) {
	r := setup(t)
	in := r.file("in.pdf", pdftest.Numbered("", 3))
	cases := []struct{ op, opts, param string }{
		{"pdf.pages", `{"pages":"4"}`, "options.pages"},
		{"pdf.pages", `{"pages":"1-x"}`, "options.pages"},
		{"pdf.pages", `{"delete":"1-3"}`, "options.delete"},
		{"pdf.pages", `{}`, "options"},
		{"pdf.pages", `{"rotate":[{"pages":"1","angle":45}]}`, "options.rotate[0].angle"},
		{"pdf.split", `{"ranges":["1","7"]}`, "options.ranges[1]"},
		{"pdf.split", `{"ranges":["1"],"every":1}`, "options.every"},
		{"pdf.compress", `{"level":"max"}`, "options.level"},
	}
	for _, c := range cases {
		_, err := r.do(c.op, c.opts, in)
		de, ok := err.(*domain.Error)
		if !ok || de.Code != domain.CodeInvalidRequest || de.Param != c.param {
			t.Errorf("%s %s: %v, want invalid_request on %s", c.op, c.opts, err, c.param)
		}
	}
}

func TestCountPagesAndVerify(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	in := r.file("in.pdf", pdftest.Numbered("", 7))
	if n, err := pdf.CountPages(ctx, in); err != nil || n != 7 {
		t.Fatalf("CountPages = %d, %v", n, err)
	}
	if _, err := pdf.CountPages(ctx, r.file("loop.pdf", loopPDF())); domain.ErrorCode(err) != domain.CodeCorruptedFile {
		t.Fatalf("loop: %v", err)
	}
	if err := pdf.Verify(ctx, in, 7); err != nil {
		t.Fatal(err)
	}
	if err := pdf.Verify(ctx, in, 6); domain.ErrorCode(err) != domain.CodeOutputValidationFailed {
		t.Fatalf("wrong count verified: %v", err)
	}
	if err := pdf.Verify(ctx, r.file("bad.pdf", []byte("%PDF-1.4 nothing")), 0); domain.ErrorCode(err) != domain.CodeOutputValidationFailed {
		t.Fatalf("garbage verified: %v", err)
	}
}

func TestCheckAndSpecs(t *testing.T) {
	e := newEngine(t, pdf.Config{})
	if err := e.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range pdf.Specs() {
		names = append(names, s.Name)
		// A split is priced by the parts it makes; the others by the files they read.
		per := domain.PerFile
		if s.Name == "pdf.split" {
			per = domain.PerOutput
		}
		if s.Engine != "pdf" || s.Price.Per != per {
			t.Fatalf("%+v", s)
		}
	}
	if !slices.Equal(names, []string{"pdf.merge", "pdf.pages", "pdf.split", "pdf.compress"}) || pdf.Specs()[0].FileIDsOption != "file_ids" {
		t.Fatalf("specs %v", names)
	}
}
