package pdfium_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

// twoColumnPage is a Letter page: a 24 pt bold title across the top, then two
// columns, each with a 14 pt bold heading over 10 pt body lines. The right column's
// heading is set at "1 Tf" and scaled by the text matrix, as many producers do.
func twoColumnPage(rotate int) pdftest.Page {
	var c strings.Builder
	c.WriteString("BT /FB 24 Tf 72 720 Td (Annual Report) Tj ET\n")
	c.WriteString("BT /FB 14 Tf 72 680 Td (Left Heading) Tj ET\n")
	c.WriteString("BT /FB 1 Tf 14 0 0 14 320 680 Tm (Right Heading) Tj ET\n")
	for i := range 5 {
		fmt.Fprintf(&c, "BT /FR 10 Tf 72 %d Td (left body line %d) Tj ET\n", 660-i*14, i+1)
	}
	for i := range 5 {
		fmt.Fprintf(&c, "BT /FR 10 Tf 320 %d Td (right body line %d) Tj ET\n", 660-i*14, i+1)
	}
	c.WriteString("BT /FI 10 Tf 72 500 Td (an italic aside) Tj ET\n")
	return pdftest.Page{Width: 612, Height: 792, Rotate: rotate, Content: c.String(),
		Fonts: map[string]string{"FB": "Helvetica-Bold", "FR": "Helvetica", "FI": "Helvetica-Oblique"}}
}

func findRun(t *testing.T, pt *pdfium.PageText, text string) pdfium.TextRun {
	t.Helper()
	for _, r := range pt.Runs {
		if r.Text == text {
			return r
		}
	}
	var got []string
	for _, r := range pt.Runs {
		got = append(got, r.Text)
	}
	t.Fatalf("no run %q among %q", text, got)
	return pdfium.TextRun{}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestTextTwoColumnsHeadings(t *testing.T) {
	ctx := context.Background()
	var w pdftest.Writer
	path := write(t, "cols.pdf", w.Document([]pdftest.Page{twoColumnPage(0)}))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pt, err := d.Text(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Width != 612 || pt.Height != 792 || pt.Page != 1 {
		t.Fatalf("page = %d %gx%g", pt.Page, pt.Width, pt.Height)
	}
	title := findRun(t, pt, "Annual Report")
	if !title.Bold || !near(title.FontSize, 24, 0.1) || title.FontName != "Helvetica-Bold" {
		t.Fatalf("title = %+v", title)
	}
	// Baseline 720 from the bottom: the box spans it, measured from the top.
	if !near(title.Box.X0, 72, 1) || title.Box.Y0 > 792-720 || title.Box.Y1 < 792-720 {
		t.Fatalf("title box = %+v", title.Box)
	}
	rh := findRun(t, pt, "Right Heading")
	if !rh.Bold || !near(rh.FontSize, 14, 0.1) || !near(rh.Box.X0, 320, 1) {
		t.Fatalf("scaled heading = %+v", rh)
	}
	lh := findRun(t, pt, "Left Heading")
	if !near(lh.Box.Y0, rh.Box.Y0, 0.5) {
		t.Fatalf("headings on one line have tops %g and %g", lh.Box.Y0, rh.Box.Y0)
	}
	for i := 1; i <= 5; i++ {
		l := findRun(t, pt, fmt.Sprintf("left body line %d", i))
		r := findRun(t, pt, fmt.Sprintf("right body line %d", i))
		if l.Bold || !near(l.FontSize, 10, 0.1) || l.FontName != "Helvetica" || !near(l.Box.X0, 72, 1) || !near(r.Box.X0, 320, 1) {
			t.Fatalf("body line %d: %+v / %+v", i, l, r)
		}
		if l.Box.X1 >= r.Box.X0 || !near(l.Box.Y0, r.Box.Y0, 0.5) {
			t.Fatalf("columns overlap or misalign: %+v / %+v", l.Box, r.Box)
		}
		if len(l.Chars) != len(l.Text) || l.Chars[0].Rune != 'l' || l.Chars[0].Box.X0 < l.Box.X0-0.01 {
			t.Fatalf("chars of %q: %+v", l.Text, l.Chars[:2])
		}
	}
	if it := findRun(t, pt, "an italic aside"); !it.Italic || it.Bold {
		t.Fatalf("italic run = %+v", it)
	}
	if !strings.Contains(pt.Text, "Annual Report") || !strings.Contains(pt.Text, "right body line 5") {
		t.Fatalf("page text = %q", pt.Text)
	}
}

// Boxes are in the displayed page's space: on a page turned 90°, the title runs down
// the right-hand side.
func TestTextRotatedPage(t *testing.T) {
	ctx := context.Background()
	var w pdftest.Writer
	path := write(t, "rot.pdf", w.Document([]pdftest.Page{twoColumnPage(90)}))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pts, err := d.TextPages(ctx, []int{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pt := pts[0]
	if pt.Width != 792 || pt.Height != 612 {
		t.Fatalf("size = %gx%g, want 792x612", pt.Width, pt.Height)
	}
	var title *pdfium.Char
	for _, r := range pt.Runs {
		if strings.HasPrefix(r.Text, "Annual") {
			title = &r.Chars[0]
		}
	}
	if title == nil {
		t.Fatalf("no title among runs")
	}
	// Unrotated (x 72, baseline 720) → turned clockwise: x ≈ 720, y ≈ 72 from the top.
	if !near(title.Box.X0, 720, 12) || !near(title.Box.Y0, 72, 12) {
		t.Fatalf("first title char at %+v, want near (720, 72)", title.Box)
	}
}

func TestTextEmptyPage(t *testing.T) {
	ctx := context.Background()
	var w pdftest.Writer
	path := write(t, "empty.pdf", w.Document([]pdftest.Page{{Width: 200, Height: 200, Content: "0 0 1 rg 10 10 50 50 re f"}}))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pt, err := d.Text(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Text != "" || len(pt.Runs) != 0 {
		t.Fatalf("text of a drawing = %q, %d runs", pt.Text, len(pt.Runs))
	}
}

// Fonts embedded as subsets (here by Ghostscript, which embeds its own Helvetica) lose
// their "ABCDEF+" prefix and keep size and weight.
func TestTextEmbeddedSubsetFonts(t *testing.T) {
	dir := t.TempDir()
	ps := filepath.Join(dir, "in.ps")
	if err := os.WriteFile(ps, []byte(`%!PS
/Helvetica-Bold findfont 20 scalefont setfont 72 700 moveto (Big Heading) show
/Helvetica findfont 10 scalefont setfont 72 680 moveto (plain body text) show
showpage
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pdf")
	if b, err := exec.Command("gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite", "-sOutputFile="+out, ps).CombinedOutput(); err != nil {
		t.Fatalf("gs (apt-get install ghostscript): %v %s", err, b)
	}
	ctx := context.Background()
	d, err := pool.Open(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pt, err := d.Text(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, body := findRun(t, pt, "Big Heading"), findRun(t, pt, "plain body text")
	if !h.Bold || !near(h.FontSize, 20, 0.1) || strings.Contains(h.FontName, "+") || h.FontName == "" {
		t.Fatalf("heading = %+v", h)
	}
	if body.Bold || !near(body.FontSize, 10, 0.1) || h.Box.Y1 > body.Box.Y0 {
		t.Fatalf("body = %+v (heading box %+v)", body, h.Box)
	}
}

// Rules are read from thin bars, from stroked lines and from the sides of stroked
// rectangles; images are counted.
func TestTextRulesAndImages(t *testing.T) {
	ctx := context.Background()
	var w pdftest.Writer
	img := w.AddJPEG(pdftest.JPEG(pdftest.Photo(40, 40, 1), 80), 40, 40)
	content := "BT /F1 10 Tf 100 700 Td (cell) Tj ET\n" +
		"0 0 0 rg 72 650 300 0.5 re f\n" + // a thin bar: one rule
		"1 w 72 600 m 372 600 l S\n" + // a stroked horizontal line
		"1 w 72 400 100 100 re S\n" + // a stroked box: four rules
		"q 40 0 0 40 400 400 cm /Im1 Do Q\n"
	path := write(t, "rules.pdf", w.Document([]pdftest.Page{{Width: 612, Height: 792, Content: content,
		Fonts: map[string]string{"F1": "Helvetica"}, Images: map[string]int{"Im1": img}}}))
	d, err := pool.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pt, err := d.Text(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Images != 1 || pt.Paths != 3 {
		t.Fatalf("images %d paths %d, want 1 and 3", pt.Images, pt.Paths)
	}
	var horiz, vert int
	for _, r := range pt.Rules {
		switch {
		case r.Y1-r.Y0 <= 3 && near(r.X0, 72, 1.5):
			horiz++
		case r.X1-r.X0 <= 3:
			vert++
		}
	}
	// The bar (y 142 from the top), the line (192), the box's top and bottom.
	if horiz != 4 || vert != 2 || len(pt.Rules) != 6 {
		t.Fatalf("rules = %+v; want 4 horizontal and 2 vertical", pt.Rules)
	}
	found := false
	for _, r := range pt.Rules {
		found = found || (near(r.Y0, 792-650.5, 1) && near(r.X1, 372, 1))
	}
	if !found {
		t.Fatalf("no bar at y 141.5 among %+v", pt.Rules)
	}
}
