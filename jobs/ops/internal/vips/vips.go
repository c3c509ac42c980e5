// Package vips is filemill's one cgo binding of libvips, started once per process by
// Init. vips.c and vips.h are the image engine's calls (header reads, the thumbnail
// pipeline, encoders, output checks, the kill flag); the image engine's Go wrappers of
// them live in jobs/ops/image (vips.go), which includes vips.h and links against this
// package. The calls below are the PDF engines': encoding rendered pages (PNG, JPEG,
// WebP), re-encoding embedded images at a smaller size, and decoding an image file
// upright (its EXIF orientation applied) for the engines that read images as pages
// (OCR, image → PDF). Every buffer handed to libvips is first copied into memory
// libvips owns, so nothing in its operation cache can point at Go memory.
package vips

/*
#cgo pkg-config: vips libwebp
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

// From vips.c, the one start of libvips (its loaders limited to the allowed ones, its
// warnings kept off stderr: callers return the error itself) and the kill flag that
// libvips' progress callback reads.
int fm_init(void);
void fm_flag_set(int *flag);
void fm_watch(VipsImage *im, int *flag);
void fm_unwatch(VipsImage *im, int *flag);

// fm_pack copies rows of bands-per-pixel samples (stride bytes apart) into a tight buffer,
// keeping only the first keep bands (RGBx → RGB).
static void *fm_pack(const unsigned char *src, int w, int h, int stride, int bands, int keep) {
	unsigned char *dst = g_malloc((size_t)w * h * keep);
	for (int y = 0; y < h; y++) {
		const unsigned char *s = src + (size_t)y * stride;
		unsigned char *d = dst + (size_t)y * w * keep;
		if (bands == keep) { memcpy(d, s, (size_t)w * keep); continue; }
		for (int x = 0; x < w; x++) { memcpy(d, s, keep); d += keep; s += bands; }
	}
	return dst;
}

static void fm_free_cb(VipsObject *o, void *data) { g_free(data); }

static VipsImage *fm_image(const unsigned char *src, int w, int h, int stride, int bands, int keep) {
	void *buf = fm_pack(src, w, h, stride, bands, keep);
	VipsImage *im = vips_image_new_from_memory(buf, (size_t)w * h * keep, w, h, keep, VIPS_FORMAT_UCHAR);
	if (!im) { g_free(buf); return NULL; }
	g_signal_connect(im, "postclose", G_CALLBACK(fm_free_cb), buf);
	im->Type = keep == 1 ? VIPS_INTERPRETATION_B_W : VIPS_INTERPRETATION_sRGB;
	return im;
}

// fm_save writes im as fmt (0 png, 1 jpeg, 2 webp) to path, or to *out when path is NULL.
static int fm_save(VipsImage *im, int fmt, int q, const char *path, void **out, size_t *len) {
	switch (fmt) {
	case 0:
		return path ? vips_pngsave(im, path, "compression", 1, "filter", VIPS_FOREIGN_PNG_FILTER_NONE, NULL)
		            : vips_pngsave_buffer(im, out, len, "compression", 1, "filter", VIPS_FOREIGN_PNG_FILTER_NONE, NULL);
	case 1: // no Huffman optimisation: a quarter of the encoding time for 2–5 % of size
		return path ? vips_jpegsave(im, path, "Q", q, NULL)
		            : vips_jpegsave_buffer(im, out, len, "Q", q, NULL);
	default:
		return path ? vips_webpsave(im, path, "Q", q, "effort", 2, NULL)
		            : vips_webpsave_buffer(im, out, len, "Q", q, "effort", 2, NULL);
	}
}


static int fm_encode(const unsigned char *src, int w, int h, int stride, int bands, int keep,
		int fmt, int q, const char *path, void **out, size_t *len, int *flag) {
	VipsImage *im = fm_image(src, w, h, stride, bands, keep);
	if (!im) return -1;
	fm_watch(im, flag);
	int r = fm_save(im, fmt, q, path, out, len);
	fm_unwatch(im, flag);
	g_object_unref(im);
	return r;
}

// fm_jpeg_resized resizes in to exactly w×h and saves it as JPEG, without alpha.
static int fm_jpeg_resized(VipsImage *in, int w, int h, int q, void **out, size_t *len) {
	VipsImage *cur = in, *tmp = NULL;
	g_object_ref(cur);
	if (cur->Bands == 2 || cur->Bands == 4) { // drop alpha: an SMask is kept separately
		if (vips_extract_band(cur, &tmp, 0, "n", cur->Bands - 1, NULL)) { g_object_unref(cur); return -1; }
		g_object_unref(cur); cur = tmp;
	}
	if (cur->BandFmt != VIPS_FORMAT_UCHAR) {
		if (vips_cast_uchar(cur, &tmp, NULL)) { g_object_unref(cur); return -1; }
		g_object_unref(cur); cur = tmp;
	}
	if (w != cur->Xsize || h != cur->Ysize) {
		double hs = (double)w / cur->Xsize, vs = (double)h / cur->Ysize;
		if (vips_resize(cur, &tmp, hs, "vscale", vs, "kernel", VIPS_KERNEL_LINEAR, NULL)) { g_object_unref(cur); return -1; }
		g_object_unref(cur); cur = tmp;
	}
	int r = vips_jpegsave_buffer(cur, out, len, "Q", q, "optimize_coding", TRUE, "strip", TRUE, NULL);
	g_object_unref(cur);
	return r;
}

// fm_load_jpeg decodes a JPEG copied into vips-owned memory, shrinking on load by shrink
// (1, 2, 4 or 8: DCT scaling, far cheaper than decoding at full size).
static VipsImage *fm_load_jpeg(const void *data, size_t n, int shrink) {
	void *copy = g_malloc(n);
	memcpy(copy, data, n);
	VipsImage *im = NULL;
	if (vips_jpegload_buffer(copy, n, &im, "shrink", shrink, "fail", TRUE, NULL)) { g_free(copy); return NULL; }
	g_signal_connect(im, "postclose", G_CALLBACK(fm_free_cb), copy);
	return im;
}

static int fm_recompress_jpeg(const void *data, size_t n, int shrink, int w, int h, int q, void **out, size_t *len) {
	VipsImage *im = fm_load_jpeg(data, n, shrink);
	if (!im) return -1;
	int r = fm_jpeg_resized(im, w, h, q, out, len);
	g_object_unref(im);
	return r;
}

static int fm_jpeg_header(const void *data, size_t n, int *w, int *h, int *bands) {
	VipsImage *im = fm_load_jpeg(data, n, 1);
	if (!im) return -1;
	*w = im->Xsize; *h = im->Ysize; *bands = im->Bands;
	g_object_unref(im);
	return 0;
}

static int fm_raw_to_jpeg(const unsigned char *src, int w, int h, int bands, int nw, int nh, int q, void **out, size_t *len) {
	VipsImage *im = fm_image(src, w, h, w * bands, bands, bands);
	if (!im) return -1;
	int r = fm_jpeg_resized(im, nw, nh, q, out, len);
	g_object_unref(im);
	return r;
}

// fm_load calls the loader named by kind (0 JPEG, 1 PNG, 2 WebP, 3 TIFF, 4 GIF) on path:
// never a loader libvips would pick by sniffing, so a file cannot choose its parser.
// The load is lazy: pixels are decoded when asked for, in order when seq is set (a
// header read), else as turning the image needs them.
static VipsImage *fm_load(const char *path, int kind, int seq) {
	VipsImage *im = NULL;
	VipsAccess a = seq ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM;
	int r;
	switch (kind) {
	case 0: r = vips_jpegload(path, &im, "access", a, "fail_on", VIPS_FAIL_ON_ERROR, NULL); break;
	case 1: r = vips_pngload(path, &im, "access", a, "fail_on", VIPS_FAIL_ON_ERROR, NULL); break;
	case 2: r = vips_webpload(path, &im, "access", a, "fail_on", VIPS_FAIL_ON_ERROR, NULL); break;
	case 3: r = vips_tiffload(path, &im, "access", a, "fail_on", VIPS_FAIL_ON_ERROR, NULL); break;
	case 4: r = vips_gifload(path, &im, "access", a, "fail_on", VIPS_FAIL_ON_ERROR, NULL); break;
	default: vips_error("filemill", "no such loader"); return NULL;
	}
	return r ? NULL : im;
}

static int fm_header(const char *path, int kind, int *w, int *h, int *orientation, double *xres) {
	VipsImage *im = fm_load(path, kind, 1);
	if (!im) return -1;
	*w = im->Xsize; *h = im->Ysize; *xres = im->Xres;
	*orientation = vips_image_get_orientation(im);
	g_object_unref(im);
	return 0;
}

// fm_load_upright decodes path as displayed: the EXIF orientation applied (libvips'
// autorot, as image.convert's thumbnail stage does), alpha flattened onto white, then 8-bit
// gray (one band) or sRGB with an unused fourth band, the layout of a PDFium bitmap.
static int fm_load_upright(const char *path, int kind, int *w, int *h, int *bands, double *xres, void **out, size_t *len, int *flag) {
	VipsImage *cur = fm_load(path, kind, 0), *tmp = NULL;
	if (!cur) return -1;
#define STEP(call) do { if (call) { g_object_unref(cur); return -1; } g_object_unref(cur); cur = tmp; } while (0)
	*xres = cur->Xres;
	STEP(vips_autorot(cur, &tmp, NULL));
	if (vips_image_hasalpha(cur)) {
		int deep = cur->Type == VIPS_INTERPRETATION_RGB16 || cur->Type == VIPS_INTERPRETATION_GREY16;
		double white = deep ? 65535 : 255;
		VipsArrayDouble *bg = vips_array_double_new(&white, 1);
		int r = vips_flatten(cur, &tmp, "background", bg, "max_alpha", white, NULL);
		vips_area_unref(VIPS_AREA(bg));
		STEP(r);
	}
	int gray = cur->Bands == 1 || vips_image_guess_interpretation(cur) == VIPS_INTERPRETATION_B_W ||
		vips_image_guess_interpretation(cur) == VIPS_INTERPRETATION_GREY16;
	STEP(vips_colourspace(cur, &tmp, gray ? VIPS_INTERPRETATION_B_W : VIPS_INTERPRETATION_sRGB, NULL));
	if (cur->BandFmt != VIPS_FORMAT_UCHAR) STEP(vips_cast_uchar(cur, &tmp, NULL));
	if (cur->Bands > (gray ? 1 : 3)) STEP(vips_extract_band(cur, &tmp, 0, "n", gray ? 1 : 3, NULL));
	if (!gray) STEP(vips_bandjoin_const1(cur, &tmp, 0, NULL));
#undef STEP
	*w = cur->Xsize; *h = cur->Ysize; *bands = cur->Bands;
	fm_watch(cur, flag);
	*out = vips_image_write_to_memory(cur, len);
	fm_unwatch(cur, flag);
	g_object_unref(cur);
	return *out ? 0 : -1;
}

static const char *fm_error(void) { return vips_error_buffer(); }
static void fm_error_clear(void) { vips_error_clear(); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"github.com/filemill/filemill/jobs/ops/internal/enginelib"
)

// Format is an output image format.
type Format int

// The formats Encode writes.
const (
	PNG Format = iota
	JPEG
	WebP
)

var (
	initOnce sync.Once
	initErr  error
)

// Init starts libvips once per process; later calls return the first result. Every
// package that calls libvips starts it here.
func Init() error {
	initOnce.Do(func() {
		if initErr = enginelib.Load(); initErr != nil {
			return
		}
		if C.fm_init() != 0 {
			initErr = fmt.Errorf("vips: start libvips: %s", takeError())
		}
	})
	return initErr
}

// Version is the linked libvips version, e.g. "8.14.1".
func Version() string {
	return fmt.Sprintf("%d.%d.%d", int(C.vips_version(0)), int(C.vips_version(1)), int(C.vips_version(2)))
}

// takeError returns and clears libvips' error buffer. It is per process, so under
// concurrency a message may belong to another call: it goes to logs, never to clients.
func takeError() string {
	s := strings.TrimSpace(C.GoString(C.fm_error()))
	C.fm_error_clear()
	if s == "" {
		s = "unknown libvips error"
	}
	return s
}

// LastError returns and clears libvips' error buffer, as takeError, for the callers of
// vips.c outside this package (the image engine).
func LastError() error { return errors.New(takeError()) }

// Pixels is an 8-bit image in memory: Bands samples per pixel, rows Stride bytes apart.
// Keep says how many leading bands are image data (1 gray, 3 RGB); the rest are padding.
type Pixels struct {
	Pix                   []byte
	Width, Height, Stride int
	Bands, Keep           int
}

func (p Pixels) check() error {
	if p.Width <= 0 || p.Height <= 0 || p.Bands <= 0 || p.Keep <= 0 || p.Keep > p.Bands ||
		p.Stride < p.Width*p.Bands || len(p.Pix) < p.Stride*(p.Height-1)+p.Width*p.Bands {
		return errors.New("vips: pixel buffer does not match its dimensions")
	}
	return nil
}

// stopFlag is a flag in C memory that libvips' threads read (fm_eval) and that is set
// when a context ends; watch's release frees it once no setter can run.
type stopFlag struct {
	mu sync.Mutex
	p  *C.int
}

// watch returns a flag set when ctx ends, and its release, to be called after the
// libvips call that read it.
func watch(ctx context.Context) (*C.int, func()) {
	f := &stopFlag{p: (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))}
	if ctx.Err() != nil {
		C.fm_flag_set(f.p) // at once: an AfterFunc's goroutine may come too late
	}
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.p != nil {
			C.fm_flag_set(f.p)
		}
	})
	return f.p, func() {
		stop()
		f.mu.Lock()
		defer f.mu.Unlock()
		C.free(unsafe.Pointer(f.p))
		f.p = nil
	}
}

// stopped is the error of a libvips call: ctx's when it ended (libvips was told to
// stop), else err.
func stopped(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("vips: %w", ctxErr)
	}
	return err
}

// EncodeFile writes p to path in format f; quality applies to JPEG and WebP. When ctx
// ends, libvips stops at its next tile and ctx's error is returned.
func EncodeFile(ctx context.Context, path string, p Pixels, f Format, quality int) error {
	if err := Init(); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	flag, release := watch(ctx)
	defer release()
	if C.fm_encode((*C.uchar)(unsafe.Pointer(&p.Pix[0])), C.int(p.Width), C.int(p.Height), C.int(p.Stride),
		C.int(p.Bands), C.int(p.Keep), C.int(f), C.int(quality), cpath, nil, nil, flag) != 0 {
		return stopped(ctx, fmt.Errorf("vips: encode: %s", takeError()))
	}
	return nil
}

// Encode returns p encoded in format f; like EncodeFile it stops when ctx ends.
func Encode(ctx context.Context, p Pixels, f Format, quality int) ([]byte, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	flag, release := watch(ctx)
	defer release()
	var out unsafe.Pointer
	var n C.size_t
	if C.fm_encode((*C.uchar)(unsafe.Pointer(&p.Pix[0])), C.int(p.Width), C.int(p.Height), C.int(p.Stride),
		C.int(p.Bands), C.int(p.Keep), C.int(f), C.int(quality), nil, &out, &n, flag) != 0 {
		return nil, stopped(ctx, fmt.Errorf("vips: encode: %s", takeError()))
	}
	return takeBuffer(out, n), nil
}

func takeBuffer(out unsafe.Pointer, n C.size_t) []byte {
	defer C.g_free(C.gpointer(out))
	return C.GoBytes(out, C.int(n))
}

// JPEGHeader returns a JPEG's dimensions and band count (1 gray, 3 RGB/YCbCr, 4 CMYK).
func JPEGHeader(data []byte) (width, height, bands int, err error) {
	if err := Init(); err != nil {
		return 0, 0, 0, err
	}
	if len(data) == 0 {
		return 0, 0, 0, errors.New("vips: empty JPEG")
	}
	var w, h, b C.int
	if C.fm_jpeg_header(unsafe.Pointer(&data[0]), C.size_t(len(data)), &w, &h, &b) != 0 {
		return 0, 0, 0, fmt.Errorf("vips: read JPEG header: %s", takeError())
	}
	return int(w), int(h), int(b), nil
}

// ResizeJPEG decodes a JPEG (shrinking on load by shrink: 1, 2, 4 or 8), resizes it to
// width×height and encodes it again at quality.
func ResizeJPEG(data []byte, shrink, width, height, quality int) ([]byte, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	if len(data) == 0 || width <= 0 || height <= 0 {
		return nil, errors.New("vips: bad JPEG resize request")
	}
	var out unsafe.Pointer
	var n C.size_t
	if C.fm_recompress_jpeg(unsafe.Pointer(&data[0]), C.size_t(len(data)), C.int(shrink), C.int(width), C.int(height),
		C.int(quality), &out, &n) != 0 {
		return nil, fmt.Errorf("vips: recompress JPEG: %s", takeError())
	}
	return takeBuffer(out, n), nil
}

// RawToJPEG encodes tightly packed 8-bit samples (1 gray or 3 RGB bands),
// resized to width×height, as a JPEG at quality.
func RawToJPEG(pix []byte, w, h, bands, width, height, quality int) ([]byte, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	if w <= 0 || h <= 0 || (bands != 1 && bands != 3) || len(pix) < w*h*bands || width <= 0 || height <= 0 {
		return nil, errors.New("vips: bad raw image")
	}
	var out unsafe.Pointer
	var n C.size_t
	if C.fm_raw_to_jpeg((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), C.int(bands), C.int(width), C.int(height),
		C.int(quality), &out, &n) != 0 {
		return nil, fmt.Errorf("vips: encode JPEG: %s", takeError())
	}
	return takeBuffer(out, n), nil
}

// Loader is a libvips file loader, named rather than picked by sniffing.
type Loader int

// The loaders Header and LoadUpright call.
const (
	LoadJPEG Loader = iota
	LoadPNG
	LoadWebP
	LoadTIFF
	LoadGIF
)

// LoaderFor returns the loader of an image MIME type; false for types libvips is not
// trusted with here (BMP has no libvips loader outside ImageMagick).
func LoaderFor(mime string) (Loader, bool) {
	l, ok := map[string]Loader{"image/jpeg": LoadJPEG, "image/png": LoadPNG, "image/webp": LoadWebP,
		"image/tiff": LoadTIFF, "image/gif": LoadGIF}[mime]
	return l, ok
}

// Header is what an image file's header says.
type Header struct {
	Width, Height int // as stored
	// Orientation is the EXIF orientation, 1–8 (1 when absent).
	Orientation int
	// DPI is the density the file records; 0 when it records none believable.
	DPI float64
}

// ReadHeader reads path's header with loader l; no pixel is decoded.
func ReadHeader(path string, l Loader) (Header, error) {
	if err := Init(); err != nil {
		return Header{}, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var w, h, o C.int
	var xres C.double
	if C.fm_header(cpath, C.int(l), &w, &h, &o, &xres) != 0 {
		return Header{}, fmt.Errorf("vips: read header: %s", takeError())
	}
	return Header{Width: int(w), Height: int(h), Orientation: max(1, min(8, int(o))), DPI: dpi(float64(xres))}, nil
}

// dpi converts libvips' pixels per millimetre. A file that records no density reads
// as 72 dpi, which is also what cameras and most writers record when they know
// nothing: it counts as none, as does anything under 50 dpi.
func dpi(xres float64) float64 {
	d := xres * 25.4
	if d < 50 || d > 10000 || math.Abs(d-72) < 0.5 {
		return 0
	}
	return d
}

// Upright is an image decoded as displayed: 8-bit gray (Bands 1) or R, G, B and an
// unused byte (Bands 4), rows packed.
type Upright struct {
	Pixels
	// DPI is the file's recorded density, 0 when none.
	DPI float64
}

// LoadUpright decodes path with loader l as it is displayed: its EXIF orientation
// applied with libvips' autorot (the orientation image.convert applies), transparency
// flattened onto white. The caller checks the pixel limits from the header first.
// When ctx ends, libvips stops at its next tile and ctx's error is returned.
func LoadUpright(ctx context.Context, path string, l Loader) (*Upright, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	flag, release := watch(ctx)
	defer release()
	var w, h, bands C.int
	var xres C.double
	var out unsafe.Pointer
	var n C.size_t
	if C.fm_load_upright(cpath, C.int(l), &w, &h, &bands, &xres, &out, &n, flag) != 0 {
		return nil, stopped(ctx, fmt.Errorf("vips: decode image: %s", takeError()))
	}
	pix := takeBuffer(out, n)
	b := int(bands)
	return &Upright{Pixels: Pixels{Pix: pix, Width: int(w), Height: int(h), Stride: int(w) * b, Bands: b, Keep: min(b, 3)},
		DPI: dpi(float64(xres))}, nil
}
