package ocr

import (
	"context"

	"github.com/filemill/filemill/jobs/ops/pdfium"
)

// PDFiumRenderer renders PDF pages into memory on a PDFium pool: the page reaches
// tesseract as the very pixels an image file would have held, without the encoding
// and decoding in between. It is the renderer workers use.
func PDFiumRenderer(p *pdfium.Pool) RenderBitmapFunc {
	return func(ctx context.Context, pdfPath string, page, dpi int) (*Bitmap, error) {
		d, err := p.Open(ctx, pdfPath)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		b, err := d.Render(ctx, page, pdfium.RenderOptions{DPI: float64(dpi)})
		if err != nil {
			return nil, err
		}
		return &Bitmap{Width: b.Width, Height: b.Height, Stride: b.Stride, Gray: b.Gray, Pix: b.Pix}, nil
	}
}
