package pdfium

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// PageContent is what a page draws, as far as an engine that treats scans apart from
// born-digital pages needs to know (OCR).
type PageContent struct {
	// Text is true when the page draws text objects of its own.
	Text bool
	// Image is the page's image when the page draws one image and nothing else, the
	// image covering the page, neither turned nor mirrored, and the page not rotated: a
	// scan, whose pixels can be read as they are stored instead of rendering the page.
	// Nil otherwise.
	Image *PageImage
}

// PageImage is the one image of a scanned page.
type PageImage struct {
	// Width and Height are the image's samples as stored.
	Width, Height int
	// JPEG holds the image's bytes as stored when it is a JPEG of gray or RGB samples;
	// Bitmap its decoded pixels otherwise.
	JPEG   []byte
	Bitmap *Bitmap
	// Matrix maps the image's unit square onto the page, in PDF page space (a, b, c,
	// d, e, f as the cm operator takes them).
	Matrix [6]float64
}

// PDFium's image colour spaces (FPDF_COLORSPACE_*) and bitmap formats.
const (
	colorspaceGray = 1
	colorspaceRGB  = 2
	colorspaceICC  = 7

	bitmapGray = 1
	bitmapBGR  = 2
	bitmapBGRx = 3
	bitmapBGRA = 4
)

// Content reports what page n (1-based) draws; with decode, a scan's image comes back
// with its bytes or pixels (a JPEG as stored, else decoded within MaxPixels).
//
// Errors: invalid_request (no such page), unsupported_input (over MaxPixels),
// corrupted_file, ctx's error.
func (d *Document) Content(ctx context.Context, n int, decode bool) (*PageContent, error) {
	pg, err := d.loadPage(ctx, n)
	if err != nil {
		return nil, err
	}
	defer pg.close()
	in := d.in
	count, err := in.quickInt("FPDFPage_CountObjects", pg.handle)
	if err != nil {
		return nil, err
	}
	out := &PageContent{}
	var image uint64
	for i := range min(count, maxObjectsPerPage) {
		obj, err := in.quick("FPDFPage_GetObject", pg.handle, uint64(i))
		if err != nil {
			return nil, err
		}
		typ, err := in.quickInt("FPDFPageObj_GetType", obj)
		if err != nil {
			return nil, err
		}
		switch typ {
		case objText:
			out.Text = true
		case objImage:
			image = obj
		}
	}
	if count != 1 || image == 0 {
		return out, nil
	}
	rot, err := in.quickInt("FPDFPage_GetRotation", pg.handle)
	if err != nil || rot != 0 {
		return out, err
	}
	m := in.scratch
	if ok, err := in.quick("FPDFPageObj_GetMatrix", image, uint64(m)); err != nil || ok == 0 {
		return out, err
	}
	var matrix [6]float64
	for i := range matrix {
		matrix[i] = in.f32(m + uint32(4*i))
	}
	// Upright: scaled and moved only. A turned or mirrored image would reach OCR on its
	// side; the page is rendered instead.
	a, b, c, dd := matrix[0], matrix[1], matrix[2], matrix[3]
	if a <= 0 || dd <= 0 || math.Abs(b) > 1e-3*a || math.Abs(c) > 1e-3*dd {
		return out, nil
	}
	// Covering the page (its crop box, within a point): the image's pixels are then the
	// page's, and what is recognised in them sits where it does on the page.
	bb := in.scratch + 24
	if ok, err := in.quick("FPDF_GetPageBoundingBox", pg.handle, uint64(bb)); err != nil || ok == 0 {
		return out, err
	}
	left, top, right, bottom := in.f32(bb), in.f32(bb+4), in.f32(bb+8), in.f32(bb+12)
	const slack = 1.0
	if math.Abs(matrix[4]-left) > slack || math.Abs(matrix[5]-bottom) > slack ||
		math.Abs(a-(right-left)) > slack || math.Abs(dd-(top-bottom)) > slack {
		return out, nil
	}
	// FPDF_IMAGEOBJ_METADATA: width, height (uint32), horizontal and vertical dpi
	// (float), bits per pixel (uint32), colour space (int), marked content id (int).
	meta := in.scratch + 48
	if ok, err := in.quick("FPDFImageObj_GetImageMetadata", image, pg.handle, uint64(meta)); err != nil || ok == 0 {
		return out, err
	}
	img := &PageImage{Width: in.i32(meta), Height: in.i32(meta + 4), Matrix: matrix}
	bpp, cs := in.i32(meta+16), in.i32(meta+20)
	if img.Width <= 0 || img.Height <= 0 {
		return out, nil
	}
	out.Image = img
	if !decode {
		return out, nil
	}
	if int64(img.Width)*int64(img.Height) > d.pool.cfg.MaxPixels {
		return nil, unsupported("the image of page %d has %d×%d pixels; at most %d are allowed", n, img.Width, img.Height, d.pool.cfg.MaxPixels)
	}
	jpeg, err := isPlainJPEG(ctx, in, image, bpp, cs)
	if err != nil {
		return nil, err
	}
	if jpeg {
		img.JPEG, err = imageBytes(ctx, in, image)
	} else {
		img.Bitmap, err = imageBitmap(ctx, in, image)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// isPlainJPEG reports whether the image is stored as a JPEG (its only filter DCTDecode)
// of gray or RGB samples: bytes any JPEG decoder reads as the PDF shows them.
func isPlainJPEG(ctx context.Context, in *instance, image uint64, bpp, cs int) (bool, error) {
	if (bpp != 8 && bpp != 24) || (cs != colorspaceGray && cs != colorspaceRGB && cs != colorspaceICC) {
		return false, nil
	}
	n, err := in.callInt(ctx, "FPDFImageObj_GetImageFilterCount", image)
	if err != nil || n != 1 {
		return false, err
	}
	buf := in.scratch + 80
	const size = 32
	l, err := in.callInt(ctx, "FPDFImageObj_GetImageFilter", image, 0, uint64(buf), size)
	if err != nil || l <= 0 || l > size {
		return false, err
	}
	name, ok := in.mod.Memory().Read(buf, uint32(l-1)) // without the NUL
	return ok && string(name) == "DCTDecode", nil
}

// imageBytes copies the image's stream data as stored (filters not applied).
func imageBytes(ctx context.Context, in *instance, image uint64) ([]byte, error) {
	n, err := in.callInt(ctx, "FPDFImageObj_GetImageDataRaw", image, 0, 0)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, errors.New("pdfium: the image has no data")
	}
	buf, err := in.call(ctx, "malloc", uint64(n))
	if err != nil {
		return nil, err
	}
	if buf == 0 {
		return nil, in.pool.outOfMemory()
	}
	defer in.free(uint32(buf))
	if _, err := in.call(ctx, "FPDFImageObj_GetImageDataRaw", image, buf, uint64(n)); err != nil {
		return nil, err
	}
	data, ok := in.mod.Memory().Read(uint32(buf), uint32(n))
	if !ok {
		return nil, errors.New("pdfium: image data outside instance memory")
	}
	return append([]byte(nil), data...), nil
}

// imageBitmap decodes the image (filters, colour space and decode array applied) into
// gray or R, G, B and an unused byte per pixel.
func imageBitmap(ctx context.Context, in *instance, image uint64) (*Bitmap, error) {
	bm, err := in.call(ctx, "FPDFImageObj_GetBitmap", image)
	if err != nil {
		return nil, err
	}
	if bm == 0 {
		return nil, in.pool.outOfMemory()
	}
	defer func() {
		if !in.dead {
			_, _ = in.call(context.Background(), "FPDFBitmap_Destroy", bm)
		}
	}()
	var f [5]int // format, width, height, stride, buffer
	for i, name := range []string{"FPDFBitmap_GetFormat", "FPDFBitmap_GetWidth", "FPDFBitmap_GetHeight", "FPDFBitmap_GetStride", "FPDFBitmap_GetBuffer"} {
		if f[i], err = in.quickInt(name, bm); err != nil {
			return nil, err
		}
	}
	format, w, h, stride := f[0], f[1], f[2], f[3]
	bpp := map[int]int{bitmapGray: 1, bitmapBGR: 3, bitmapBGRx: 4, bitmapBGRA: 4}[format]
	if bpp == 0 || w <= 0 || h <= 0 || stride < w*bpp {
		return nil, fmt.Errorf("pdfium: image bitmap of format %d, %d×%d", format, w, h)
	}
	src, ok := in.mod.Memory().Read(uint32(f[4]), uint32(stride*h))
	if !ok {
		return nil, errors.New("pdfium: bitmap outside instance memory")
	}
	if format == bitmapGray {
		return &Bitmap{Width: w, Height: h, Stride: stride, Gray: true, Pix: append([]byte(nil), src...)}, nil
	}
	out := &Bitmap{Width: w, Height: h, Stride: 4 * w, Pix: make([]byte, 4*w*h)}
	for y := range h {
		s, o := src[y*stride:], out.Pix[y*out.Stride:]
		for x := range w {
			b, g, r := int(s[bpp*x]), int(s[bpp*x+1]), int(s[bpp*x+2])
			if format == bitmapBGRA { // onto white, as the page shows it
				a := int(s[bpp*x+3])
				b, g, r = (b*a+255*(255-a))/255, (g*a+255*(255-a))/255, (r*a+255*(255-a))/255
			}
			o[4*x], o[4*x+1], o[4*x+2] = byte(r), byte(g), byte(b)
		}
	}
	return out, nil
}
