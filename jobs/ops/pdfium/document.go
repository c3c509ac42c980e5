package pdfium

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

// Document is one open PDF on one PDFium instance. It is not safe for concurrent use;
// RenderPages and TextPages spread pages over further instances themselves.
type Document struct {
	pool   *Pool
	in     *instance
	handle uint64
	path   string
	pages  int
}

// Open opens the PDF at path on a free instance, waiting for one. Close releases it.
//
// Errors: encrypted_file (a password is needed), corrupted_file (not a readable PDF),
// unsupported_input (more pages than MaxPages), ctx's error.
func (p *Pool) Open(ctx context.Context, path string) (*Document, error) {
	return p.open(ctx, path, true)
}

func (p *Pool) open(ctx context.Context, path string, wait bool) (*Document, error) {
	in, err := p.acquire(ctx, wait)
	if err != nil {
		return nil, err
	}
	doc, err := in.openPath(ctx, path)
	if err != nil {
		in.release()
		return nil, err
	}
	d := &Document{pool: p, in: in, handle: doc, path: path}
	n, err := in.callInt(ctx, "FPDF_GetPageCount", doc)
	if err != nil {
		d.Close()
		return nil, err
	}
	if n < 0 {
		d.Close()
		return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF's page tree cannot be read"}
	}
	if n > p.cfg.MaxPages {
		d.Close()
		return nil, unsupported("the PDF has %d pages; at most %d are processed", n, p.cfg.MaxPages)
	}
	d.pages = n
	return d, nil
}

// Close closes the document and releases its instance.
func (d *Document) Close() {
	if d.in == nil {
		return
	}
	d.in.closeDocument(d.handle)
	d.in.release()
	d.in = nil
}

// PageCount is the number of pages PDFium found.
func (d *Document) PageCount() int { return d.pages }

// page is one loaded page; close it when done.
type page struct {
	d      *Document
	handle uint64
	// width and height are the page's size in points as displayed (rotation applied).
	width, height float64
}

func (d *Document) loadPage(ctx context.Context, n int) (*page, error) {
	if d.in == nil {
		return nil, errors.New("pdfium: document is closed")
	}
	if n < 1 || n > d.pages {
		return nil, &domain.Error{Code: domain.CodeInvalidRequest,
			Message: fmt.Sprintf("page %d does not exist: the PDF has %d pages", n, d.pages)}
	}
	h, err := d.in.call(ctx, "FPDF_LoadPage", d.handle, uint64(n-1))
	if err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: fmt.Sprintf("page %d of the PDF cannot be read", n)}
	}
	pg := &page{d: d, handle: h}
	if pg.width, err = d.in.callF32(context.Background(), "FPDF_GetPageWidthF", h); err == nil {
		pg.height, err = d.in.callF32(context.Background(), "FPDF_GetPageHeightF", h)
	}
	if err != nil {
		pg.close()
		return nil, err
	}
	if !(pg.width > 0 && pg.height > 0) || math.IsInf(pg.width, 0) || math.IsInf(pg.height, 0) {
		pg.close()
		return nil, &domain.Error{Code: domain.CodeCorruptedFile, Message: fmt.Sprintf("page %d of the PDF has no usable size", n)}
	}
	return pg, nil
}

func (pg *page) close() {
	if !pg.d.in.dead {
		_, _ = pg.d.in.call(context.Background(), "FPDF_ClosePage", pg.handle)
	}
}

// PageSize returns page n's size in points as displayed (its rotation applied).
func (d *Document) PageSize(ctx context.Context, n int) (width, height float64, err error) {
	pg, err := d.loadPage(ctx, n)
	if err != nil {
		return 0, 0, err
	}
	defer pg.close()
	return pg.width, pg.height, nil
}

// RenderOptions says how large to render a page: at DPI pixels per inch (72 renders
// a point as a pixel: a Letter page is 612×792), or Width pixels wide with the height
// following the page's aspect ratio. Width wins when both are set; neither means 72 dpi.
type RenderOptions struct {
	DPI   float64
	Width int
	// Gray renders one 8-bit gray channel instead of RGB.
	Gray bool
}

// pixelSize is the rendered size of a page of w×h points.
func (o RenderOptions) pixelSize(w, h float64) (int, int) {
	if o.Width > 0 {
		return o.Width, max(1, int(math.Round(h*float64(o.Width)/w)))
	}
	dpi := o.DPI
	if dpi <= 0 {
		dpi = 72
	}
	return max(1, int(math.Round(w*dpi/72))), max(1, int(math.Round(h*dpi/72)))
}

// Bitmap is a rendered page: Gray has one byte per pixel, otherwise each pixel is four
// bytes R, G, B and an unused byte. Rows are Stride bytes apart.
type Bitmap struct {
	Width, Height, Stride int
	Gray                  bool
	Pix                   []byte
}

func (b *Bitmap) pixels() vips.Pixels {
	bands, keep := 4, 3
	if b.Gray {
		bands, keep = 1, 1
	}
	return vips.Pixels{Pix: b.Pix, Width: b.Width, Height: b.Height, Stride: b.Stride, Bands: bands, Keep: keep}
}

// PDFium render flags.
const (
	renderAnnotations = 0x01
	renderGrayscale   = 0x08
	renderReverseByte = 0x10 // BGRx → RGBx
)

// Render rasterises page n (1-based) on white, annotations included.
//
// Errors: invalid_request (no such page), unsupported_input (the bitmap would exceed
// MaxPixels), resource_limit_exceeded (it does not fit the instance's memory),
// corrupted_file, ctx's error.
func (d *Document) Render(ctx context.Context, n int, o RenderOptions) (*Bitmap, error) {
	var out *Bitmap
	err := d.renderView(ctx, n, o, func(view vips.Pixels) error {
		out = &Bitmap{Width: view.Width, Height: view.Height, Stride: view.Stride, Gray: view.Bands == 1,
			Pix: append([]byte(nil), view.Pix...)}
		return nil
	})
	return out, err
}

// renderView renders page n and hands use a view of the bitmap in instance memory,
// valid only during the call.
func (d *Document) renderView(ctx context.Context, n int, o RenderOptions, use func(vips.Pixels) error) error {
	pg, err := d.loadPage(ctx, n)
	if err != nil {
		return err
	}
	defer pg.close()
	w, h := o.pixelSize(pg.width, pg.height)
	if int64(w)*int64(h) > d.pool.cfg.MaxPixels || w > 1<<16 || h > 1<<16 {
		return unsupported("page %d would render at %d×%d pixels; at most %d pixels are allowed", n, w, h, d.pool.cfg.MaxPixels)
	}
	in := d.in
	var bm uint64
	bands := 4
	if o.Gray {
		bands = 1
		bm, err = in.call(ctx, "FPDFBitmap_CreateEx", uint64(w), uint64(h), 1, 0, 0)
	} else {
		bm, err = in.call(ctx, "FPDFBitmap_Create", uint64(w), uint64(h), 0)
	}
	if err != nil {
		return err
	}
	if bm == 0 {
		return d.pool.outOfMemory()
	}
	defer func() {
		if !in.dead {
			_, _ = in.call(context.Background(), "FPDFBitmap_Destroy", bm)
		}
	}()
	if _, err := in.call(ctx, "FPDFBitmap_FillRect", bm, 0, 0, uint64(w), uint64(h), 0xFFFFFFFF); err != nil {
		return err
	}
	flags := uint64(renderAnnotations)
	if o.Gray {
		flags |= renderGrayscale
	} else {
		flags |= renderReverseByte
	}
	if err := pg.renderProgressively(ctx, bm, w, h, flags); err != nil {
		return err
	}
	buf, err := in.quick("FPDFBitmap_GetBuffer", bm)
	if err != nil {
		return err
	}
	stride, err := in.quickInt("FPDFBitmap_GetStride", bm)
	if err != nil {
		return err
	}
	view, ok := in.mod.Memory().Read(uint32(buf), uint32(stride*h))
	if !ok || stride < w*bands {
		return errors.New("pdfium: bitmap outside instance memory")
	}
	return use(vips.Pixels{Pix: view, Width: w, Height: h, Stride: stride, Bands: bands, Keep: min(bands, 3)})
}

// PDFium's progressive render states.
const (
	renderToBeContinued = 1
	renderDone          = 2
)

// renderProgressively renders the page in steps, checking ctx between them. PDFium
// asks its pause object at each checkpoint; go-pdfium's pause callback answers "pause"
// for a handle it does not know, which is what this one is.
func (pg *page) renderProgressively(ctx context.Context, bm uint64, w, h int, flags uint64) error {
	in := pg.d.in
	ref, err := in.alloc(ctx, []byte("filemill-pause"))
	if err != nil {
		return err
	}
	defer in.free(ref)
	pause, err := in.call(ctx, "IFSDK_PAUSE_Create", uint64(ref))
	if err != nil {
		return err
	}
	if pause == 0 {
		return pg.d.pool.outOfMemory()
	}
	defer in.free(uint32(pause))
	status, err := in.callInt(ctx, "FPDF_RenderPageBitmap_Start", bm, pg.handle, 0, 0, uint64(w), uint64(h), 0, flags, pause)
	for err == nil && status == renderToBeContinued {
		if err = ctx.Err(); err == nil {
			status, err = in.callInt(ctx, "FPDF_RenderPage_Continue", pg.handle, pause)
		}
	}
	if !in.dead {
		_, _ = in.call(ctx, "FPDF_RenderPage_Close", pg.handle)
	}
	if err != nil {
		return err
	}
	if status != renderDone {
		return &domain.Error{Code: domain.CodeCorruptedFile, Message: "a page of the PDF cannot be rendered"}
	}
	return nil
}

// ImageOptions is a rendered page written as an image file.
type ImageOptions struct {
	RenderOptions
	Format  string // "png", "jpeg" or "webp"
	Quality int    // JPEG and WebP quality 1–100; 0 means 85
}

func (o ImageOptions) vipsFormat() (vips.Format, int, error) {
	q := o.Quality
	if q <= 0 || q > 100 {
		q = 85
	}
	switch o.Format {
	case "png", "":
		return vips.PNG, q, nil
	case "jpeg", "jpg":
		return vips.JPEG, q, nil
	case "webp":
		return vips.WebP, q, nil
	}
	return 0, 0, fmt.Errorf("pdfium: unknown image format %q", o.Format)
}

// Rendered is one page written to an image file.
type Rendered struct {
	Page          int
	Path          string
	Width, Height int
}

// RenderFile renders page n into an image file at out.
func (d *Document) RenderFile(ctx context.Context, n int, o ImageOptions, out string) (Rendered, error) {
	f, q, err := o.vipsFormat()
	if err != nil {
		return Rendered{}, err
	}
	r := Rendered{Page: n, Path: out}
	err = d.renderView(ctx, n, o.RenderOptions, func(view vips.Pixels) error {
		r.Width, r.Height = view.Width, view.Height
		return vips.EncodeFile(ctx, out, view, f, q)
	})
	return r, err
}

// RenderPage opens path, renders page n (1-based) into an image file at out and
// closes the document: the single-page entry point for OCR and image conversion.
func (p *Pool) RenderPage(ctx context.Context, path string, n int, o ImageOptions, out string) (Rendered, error) {
	d, err := p.Open(ctx, path)
	if err != nil {
		return Rendered{}, err
	}
	defer d.Close()
	return d.RenderFile(ctx, n, o, out)
}

// RenderPages renders pages (1-based, in any order, repeats allowed) into image files
// named by out(page), using this document's instance and as many further free
// instances as there are pages to share. progress, when set, is called after each
// page with the number done. Results are in the order of pages.
func (d *Document) RenderPages(ctx context.Context, pages []int, o ImageOptions, out func(page int) string, progress func(done, total int)) ([]Rendered, error) {
	if _, _, err := o.vipsFormat(); err != nil {
		return nil, err
	}
	res := make([]Rendered, len(pages))
	err := d.eachPage(ctx, pages, progress, func(ctx context.Context, doc *Document, i int) error {
		r, err := doc.RenderFile(ctx, pages[i], o, out(pages[i]))
		res[i] = r
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// TextPages reads the text of pages like RenderPages renders them.
func (d *Document) TextPages(ctx context.Context, pages []int, progress func(done, total int)) ([]*PageText, error) {
	res := make([]*PageText, len(pages))
	err := d.eachPage(ctx, pages, progress, func(ctx context.Context, doc *Document, i int) error {
		t, err := doc.Text(ctx, pages[i])
		res[i] = t
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// eachPage runs work for every index of pages, spread over this document and further
// copies of it opened on free instances (never waiting for one: a busy pool means other
// jobs have the cores).
func (d *Document) eachPage(ctx context.Context, pages []int, progress func(done, total int), work func(context.Context, *Document, int) error) error {
	for _, n := range pages {
		if n < 1 || n > d.pages {
			return &domain.Error{Code: domain.CodeInvalidRequest,
				Message: fmt.Sprintf("page %d does not exist: the PDF has %d pages", n, d.pages)}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		next     int
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || next >= len(pages) {
			return 0, false
		}
		next++
		return next - 1, true
	}
	finish := func(err error) {
		mu.Lock()
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		if err == nil {
			done++
			if progress != nil {
				progress(done, len(pages))
			}
		}
		mu.Unlock()
	}
	run := func(doc *Document) {
		defer wg.Done()
		for {
			i, ok := take()
			if !ok {
				return
			}
			finish(work(ctx, doc, i))
		}
	}
	extra := min(len(pages)-1, d.pool.cfg.Instances-1)
	for range max(extra, 0) {
		other, err := d.pool.open(ctx, d.path, false)
		if err != nil {
			break // busy pool or a failure this document's own instance will meet too
		}
		wg.Add(1)
		go func() {
			defer other.Close()
			run(other)
		}()
	}
	wg.Add(1)
	run(d)
	wg.Wait()
	if firstErr != nil {
		if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return firstErr
	}
	return nil
}
