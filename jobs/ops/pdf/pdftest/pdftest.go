// Package pdftest writes small, valid PDFs for tests and benchmarks: text pages with
// known words, pages in standard fonts at chosen positions, and image-heavy documents
// made of generated photographs. It writes the file format directly (objects and a
// cross-reference table) so the inputs do not depend on the code under test.
package pdftest

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// Letter is a US Letter page in points.
const LetterWidth, LetterHeight = 612, 792

// Writer assembles a PDF object by object.
type Writer struct {
	objs [][]byte // objs[i] is object i+1
}

// Add appends an object and returns its number.
func (w *Writer) Add(body string) int {
	w.objs = append(w.objs, []byte(body))
	return len(w.objs)
}

// Reserve returns the number of an object written later with Set.
func (w *Writer) Reserve() int { return w.Add("null") }

// Set replaces object n's body.
func (w *Writer) Set(n int, body string) { w.objs[n-1] = []byte(body) }

// AddStream appends a stream object with extra dictionary entries (e.g. "/Filter/DCTDecode").
func (w *Writer) AddStream(dict string, data []byte) int {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<<%s/Length %d>>\nstream\n", dict, len(data))
	b.Write(data)
	b.WriteString("\nendstream")
	w.objs = append(w.objs, b.Bytes())
	return len(w.objs)
}

// Bytes writes the file with root as the catalog.
func (w *Writer) Bytes(root int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(w.objs))
	for i, o := range w.objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", i+1)
		b.Write(o)
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(w.objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<</Size %d/Root %d 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(w.objs)+1, root, xref)
	return b.Bytes()
}

// Page is one page to write: its size, rotation, content stream and resources.
type Page struct {
	Width, Height float64
	Rotate        int
	Content       string
	// Fonts maps resource names to standard font names ("F1": "Helvetica").
	Fonts map[string]string
	// Images maps resource names to image XObject numbers (from AddJPEG).
	Images map[string]int
}

// Document writes pages into a complete PDF.
func (w *Writer) Document(pages []Page) []byte {
	pagesObj := w.Reserve()
	fontObjs := map[string]int{}
	var kids []string
	for _, p := range pages {
		var res strings.Builder
		if len(p.Fonts) > 0 {
			res.WriteString("/Font<<")
			for name, base := range p.Fonts {
				n, ok := fontObjs[base]
				if !ok {
					n = w.Add(fmt.Sprintf("<</Type/Font/Subtype/Type1/BaseFont/%s/Encoding/WinAnsiEncoding>>", base))
					fontObjs[base] = n
				}
				fmt.Fprintf(&res, "/%s %d 0 R", name, n)
			}
			res.WriteString(">>")
		}
		if len(p.Images) > 0 {
			res.WriteString("/XObject<<")
			for name, n := range p.Images {
				fmt.Fprintf(&res, "/%s %d 0 R", name, n)
			}
			res.WriteString(">>")
		}
		content := w.AddStream("", []byte(p.Content))
		rot := ""
		if p.Rotate != 0 {
			rot = fmt.Sprintf("/Rotate %d", p.Rotate)
		}
		pg := w.Add(fmt.Sprintf("<</Type/Page/Parent %d 0 R/MediaBox[0 0 %g %g]%s/Resources<<%s>>/Contents %d 0 R>>",
			pagesObj, p.Width, p.Height, rot, res.String(), content))
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
	}
	w.Set(pagesObj, fmt.Sprintf("<</Type/Pages/Kids[%s]/Count %d>>", strings.Join(kids, " "), len(pages)))
	root := w.Add(fmt.Sprintf("<</Type/Catalog/Pages %d 0 R>>", pagesObj))
	return w.Bytes(root)
}

// Escape quotes text for a PDF string literal.
func Escape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return r.Replace(s)
}

// TextPages returns a Letter-size PDF whose page i shows labels[i] in large type and a
// few lines of body text, so each page is recognisable by its text (pdftotext) and
// its pixels are not blank.
func TextPages(labels ...string) []byte {
	var w Writer
	pages := make([]Page, len(labels))
	for i, l := range labels {
		var c strings.Builder
		fmt.Fprintf(&c, "BT /F1 36 Tf 72 700 Td (%s) Tj ET\n", Escape(l))
		for j := range 30 {
			fmt.Fprintf(&c, "BT /F2 11 Tf 72 %d Td (Line %d of %s: the quick brown fox jumps over the lazy dog.) Tj ET\n", 650-j*18, j+1, Escape(l))
		}
		c.WriteString("0.2 0.4 0.8 rg 72 60 468 20 re f\n")
		pages[i] = Page{Width: LetterWidth, Height: LetterHeight, Content: c.String(),
			Fonts: map[string]string{"F1": "Helvetica-Bold", "F2": "Helvetica"}}
	}
	return w.Document(pages)
}

// Numbered returns TextPages labelled "Page 1" … "Page n" with prefix before each.
func Numbered(prefix string, n int) []byte {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("%sPage %d", prefix, i+1)
	}
	return TextPages(labels...)
}

// Photo returns a w×h photograph-like image: smooth gradients, shapes and texture,
// which JPEG compresses about as well as a real photograph.
func Photo(w, h int, seed uint64) image.Image {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	type blob struct {
		x, y, r float64
		c       [3]float64
	}
	blobs := make([]blob, 12)
	for i := range blobs {
		blobs[i] = blob{rng.Float64() * float64(w), rng.Float64() * float64(h), (0.05 + 0.2*rng.Float64()) * float64(w),
			[3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255}}
	}
	fx, fy := 2+rng.Float64()*6, 2+rng.Float64()*6
	for y := 0; y < h; y++ {
		v := float64(y) / float64(h)
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			u := float64(x) / float64(w)
			r := 120 + 80*math.Sin(u*fx+v*2)
			g := 110 + 70*math.Cos(v*fy-u*3)
			b := 100 + 60*math.Sin((u+v)*4)
			for _, bl := range blobs {
				dx, dy := float64(x)-bl.x, float64(y)-bl.y
				if math.Abs(dx) >= bl.r || math.Abs(dy) >= bl.r {
					continue
				}
				if d := dx*dx + dy*dy; d < bl.r*bl.r {
					k := 1 - math.Sqrt(d)/bl.r
					r += (bl.c[0] - r) * k
					g += (bl.c[1] - g) * k
					b += (bl.c[2] - b) * k
				}
			}
			n := (rng.Float64() - 0.5) * 40 // sensor-like noise: what keeps photos large
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = clamp(r+n), clamp(g+n), clamp(b+n), 255
		}
	}
	return img
}

func clamp(v float64) uint8 { return uint8(math.Max(0, math.Min(255, v))) }

// JPEG encodes img at quality.
func JPEG(img image.Image, quality int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: quality}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// AddJPEG adds a DCT-encoded RGB image XObject.
func (w *Writer) AddJPEG(data []byte, width, height int) int {
	return w.AddStream(fmt.Sprintf("/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace/DeviceRGB/BitsPerComponent 8/Filter/DCTDecode", width, height), data)
}

// ImageHeavy returns a PDF of n Letter pages, each a caption and a full-width photo of
// px×(px·4/3) pixels at JPEG quality 92 (about 300 dpi for px = 2400).
func ImageHeavy(n, px int) []byte {
	var w Writer
	ph := px * 4 / 3
	pages := make([]Page, n)
	for i := range pages {
		img := w.AddJPEG(JPEG(Photo(px, ph, uint64(i+1)), 92), px, ph)
		content := fmt.Sprintf("q 540 0 0 720 36 36 cm /Im1 Do Q\nBT /F1 14 Tf 36 765 Td (Photo %d) Tj ET\n", i+1)
		pages[i] = Page{Width: LetterWidth, Height: LetterHeight, Content: content,
			Fonts: map[string]string{"F1": "Helvetica"}, Images: map[string]int{"Im1": img}}
	}
	return w.Document(pages)
}

// WriteFile writes data to path or panics: for test set-up.
func WriteFile(path string, data []byte) string {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		panic(err)
	}
	return path
}

// Objects writes a PDF of the given object bodies, object i+1 being objs[i] and object 1
// the catalog.
func Objects(objs ...string) []byte {
	var w Writer
	for _, o := range objs {
		w.Add(o)
	}
	return w.Bytes(1)
}
