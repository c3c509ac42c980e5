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

// PDFiumContent reports what a PDF page draws on a PDFium pool, with a scanned page's
// image as stored (a JPEG's bytes, else its decoded pixels). It is what workers use.
func PDFiumContent(p *pdfium.Pool) PageContentFunc {
	return func(ctx context.Context, pdfPath string, page int) (*PageContent, error) {
		d, err := p.Open(ctx, pdfPath)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		c, err := d.Content(ctx, page, true)
		if err != nil {
			return nil, err
		}
		out := &PageContent{Text: c.Text}
		if s := c.Image; s != nil {
			out.Scan = &ScanImage{JPEG: s.JPEG, Width: s.Width, Height: s.Height, Matrix: s.Matrix}
			if b := s.Bitmap; b != nil {
				out.Scan.Bitmap = &Bitmap{Width: b.Width, Height: b.Height, Stride: b.Stride, Gray: b.Gray, Pix: b.Pix}
			}
		}
		return out, nil
	}
}
