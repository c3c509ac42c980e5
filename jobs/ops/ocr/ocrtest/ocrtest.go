// Package ocrtest makes scanned-looking pages for tests and benchmarks: known text
// drawn with a real font onto a Letter page at 300 dpi, PDFs of such pages (as
// img2pdf makes them, or as a scanner does: gray JPEG pages), and photos held at an
// angle (EXIF orientation, made with libvips). It is for tests only.
package ocrtest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// FontPath is the font pages are drawn with (Debian's fonts-dejavu-core).
const FontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

// Letter at 300 dpi.
const (
	Width  = 2550
	Height = 3300
	DPI    = 300
)

// Page draws lines of text (12 pt at 300 dpi) on a white Letter page, in gray.
func Page(tb testing.TB, lines []string) *image.Gray {
	tb.Helper()
	return Draw(tb, lines, Width, Height, DPI)
}

// Noise is a width×height image of black and white specks: every speck a blob,
// the page that costs tesseract the most memory a pixel.
func Noise(width, height int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, width, height))
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rnd.IntN(2) * 255)
	}
	return img
}

// Draw draws lines of text (12 pt at dpi, from an inch left and top) on a white
// width×height image, in gray.
func Draw(tb testing.TB, lines []string, width, height, dpi int) *image.Gray {
	tb.Helper()
	b, err := os.ReadFile(FontPath)
	if err != nil {
		tb.Fatalf("%s is missing: apt-get install -y --no-install-recommends fonts-dejavu-core", FontPath)
	}
	f, err := opentype.Parse(b)
	if err != nil {
		tb.Fatal(err)
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 12, DPI: float64(dpi), Hinting: font.HintingFull})
	if err != nil {
		tb.Fatal(err)
	}
	defer face.Close()
	img := image.NewGray(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	d := &font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
	lineHeight := dpi * 12 / 72 * 8 / 5 // 1.6 × the em
	for i, l := range lines {
		d.Dot = fixed.P(dpi, dpi+i*lineHeight)
		d.DrawString(l)
	}
	return img
}

// Lines groups words into lines of n words.
func Lines(words []string, n int) []string {
	var out []string
	for i := 0; i < len(words); i += n {
		out = append(out, strings.Join(words[i:min(i+n, len(words))], " "))
	}
	return out
}

// Text is a page of ordinary English words, distinct per seed, for accuracy checks.
func Text(seed, n int) []string {
	vocab := strings.Fields(`the quick brown fox jumps over lazy dog while seven bright
	students carefully measure copper wire inside their small laboratory every morning before
	breakfast and afterwards write clear reports about electric current voltage resistance
	temperature pressure volume motion energy light sound water river mountain forest garden
	window table chair paper pencil number letter market village harbour station bridge`)
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[(seed*7+i*13)%len(vocab)]
	}
	return out
}

// WritePNG writes img to dir/name and returns the path.
func WritePNG(tb testing.TB, dir, name string, img image.Image) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// PDF puts each PNG on a Letter page of its own, as a scanner's PDF does (img2pdf,
// which embeds the images losslessly), and returns the path.
func PDF(tb testing.TB, pngs []string, out string) string {
	tb.Helper()
	if _, err := exec.LookPath("img2pdf"); err != nil {
		tb.Fatal("img2pdf is missing: apt-get install -y --no-install-recommends img2pdf")
	}
	args := append([]string{"--pagesize", "Letter", "-o", out}, pngs...)
	if b, err := exec.Command("img2pdf", args...).CombinedOutput(); err != nil {
		tb.Fatalf("img2pdf: %v: %s", err, b)
	}
	return out
}

// ScannedPDF is a scan as a phone app or an office scanner makes it: each page of
// lines drawn at dpi on Letter paper, on a slightly gray, slightly noisy background,
// stored as a gray JPEG at quality 75 filling its page.
func ScannedPDF(tb testing.TB, pages [][]string, dpi int) []byte {
	tb.Helper()
	w, h := 17*dpi/2, 11*dpi
	var pw pdftest.Writer
	var out []pdftest.Page
	for i, lines := range pages {
		img := Draw(tb, lines, w, h, dpi)
		noise := uint32(i*7919 + 1)
		for j, v := range img.Pix {
			noise = noise*1664525 + 1013904223
			if v > 200 { // paper: off-white with grain
				img.Pix[j] = uint8(236 + noise>>28)
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 75}); err != nil {
			tb.Fatal(err)
		}
		im := pw.AddStream(fmt.Sprintf("/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace/DeviceGray/BitsPerComponent 8/Filter/DCTDecode", w, h), b.Bytes())
		out = append(out, pdftest.Page{Width: pdftest.LetterWidth, Height: pdftest.LetterHeight,
			Content: fmt.Sprintf("q %d 0 0 %d 0 0 cm /Im1 Do Q", pdftest.LetterWidth, pdftest.LetterHeight), Images: map[string]int{"Im1": im}})
	}
	return pw.Document(out)
}

// CommonWords is the length of the longest common subsequence of two word lists: the
// words one reading has in the other's order, a dropped or garbled word costing one.
func CommonWords(a, b []string) int {
	prev := make([]int, len(b)+1)
	for _, x := range a {
		cur := make([]int, len(b)+1)
		for j, y := range b {
			if x == y {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}
