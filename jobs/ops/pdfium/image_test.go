package pdfium_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"testing"

	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// A scanned page (one image covering it) gives its image: a JPEG byte for byte, another
// encoding decoded; a page that draws anything else, or turns its image, gives none.
func TestContentFindsTheImageOfAScannedPage(t *testing.T) {
	ctx := context.Background()
	gray := image.NewGray(image.Rect(0, 0, 170, 220))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i % 251)
	}
	jpg := pdftest.JPEG(gray, 80)
	var w pdftest.Writer
	dct := w.AddStream("/Type/XObject/Subtype/Image/Width 170/Height 220/ColorSpace/DeviceGray/BitsPerComponent 8/Filter/DCTDecode", jpg)
	raw := w.AddStream("/Type/XObject/Subtype/Image/Width 2/Height 1/ColorSpace/DeviceRGB/BitsPerComponent 8", []byte{255, 0, 0, 0, 0, 255})
	doc := w.Document([]pdftest.Page{
		{Width: 612, Height: 792, Content: "q 612 0 0 792 0 0 cm /Im1 Do Q", Images: map[string]int{"Im1": dct}},
		{Width: 612, Height: 792, Content: "q 612 0 0 792 0 0 cm /Im1 Do Q", Images: map[string]int{"Im1": raw}},
		{Width: 612, Height: 792, Content: "q 612 0 0 792 0 0 cm /Im1 Do Q BT /F1 12 Tf 72 72 Td (Hello) Tj ET",
			Images: map[string]int{"Im1": dct}, Fonts: map[string]string{"F1": "Helvetica"}},
		{Width: 612, Height: 792, Content: "q 0 792 -612 0 612 0 cm /Im1 Do Q", Images: map[string]int{"Im1": dct}},
		{Width: 612, Height: 792, Rotate: 90, Content: "q 612 0 0 792 0 0 cm /Im1 Do Q", Images: map[string]int{"Im1": dct}},
		{Width: 612, Height: 792, Content: "q 306 0 0 396 0 0 cm /Im1 Do Q", Images: map[string]int{"Im1": dct}},
	})
	d, err := pool.Open(ctx, write(t, "scan.pdf", doc))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	c, err := d.Content(ctx, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Text || c.Image == nil || !bytes.Equal(c.Image.JPEG, jpg) || c.Image.Bitmap != nil {
		t.Fatalf("page 1: want the JPEG as stored, got %+v", c)
	}
	if c.Image.Width != 170 || c.Image.Height != 220 || c.Image.Matrix != [6]float64{612, 0, 0, 792, 0, 0} {
		t.Fatalf("page 1: size %d×%d, matrix %v", c.Image.Width, c.Image.Height, c.Image.Matrix)
	}

	c, err = d.Content(ctx, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Image == nil || c.Image.Bitmap == nil || c.Image.JPEG != nil || c.Image.Matrix != [6]float64{612, 0, 0, 792, 0, 0} {
		t.Fatalf("page 2: want decoded pixels, got %+v", c.Image)
	}
	b := c.Image.Bitmap
	got := []color.RGBA{{b.Pix[0], b.Pix[1], b.Pix[2], 255}, {b.Pix[4], b.Pix[5], b.Pix[6], 255}}
	if b.Gray || b.Width != 2 || b.Height != 1 || got[0] != (color.RGBA{255, 0, 0, 255}) || got[1] != (color.RGBA{0, 0, 255, 255}) {
		t.Fatalf("page 2: pixels %+v %v", b, got)
	}

	for page, what := range map[int]string{3: "text beside the image", 4: "an image turned a quarter", 5: "a rotated page", 6: "an image covering a quarter of the page"} {
		c, err := d.Content(ctx, page, true)
		if err != nil {
			t.Fatal(err)
		}
		if c.Image != nil {
			t.Errorf("page %d (%s): no scan image expected, got %+v", page, what, c.Image)
		}
		if c.Text != (page == 3) {
			t.Errorf("page %d: text %v", page, c.Text)
		}
	}
	if _, err := d.Content(ctx, 9, false); err == nil {
		t.Error("page 9 does not exist")
	}
}
