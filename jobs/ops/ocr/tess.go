package ocr

/*
#cgo pkg-config: tesseract lept
#cgo LDFLAGS: -lgomp
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <tesseract/capi.h>
#include <leptonica/allheaders.h>

static BOOL fm_cancelled(void *flag, int words) { return *(volatile int *)flag != 0; }

// fm_recognize recognises the image set on h. OpenMP parallel regions are made
// inactive on this thread first (max-active-levels 0): tesseract's num_threads
// clauses would otherwise start a team per call, and pages already run in parallel.
static int fm_recognize(TessBaseAPI *h, int *flag) {
	omp_set_max_active_levels(0);
	ETEXT_DESC *m = TessMonitorCreate();
	TessMonitorSetCancelFunc(m, (TessCancelFunc)fm_cancelled);
	TessMonitorSetCancelThis(m, (void *)flag);
	int rc = TessBaseAPIRecognize(h, m);
	TessMonitorDelete(m);
	return rc;
}

static int fm_thread_limit(void) { return omp_get_thread_limit(); }

// fm_two_levels reports whether an 8-bit gray image holds only black and white: a
// bilevel page saved as gray, which CCITT G4 keeps exactly and far smaller than JPEG.
static int fm_two_levels(PIX *pix) {
	NUMA *h = pixGetGrayHistogram(pix, 1);
	if (h == NULL) return 0;
	int only = 1;
	for (int i = 1; i < 255 && only; i++) {
		l_int32 v = 0;
		numaGetIValue(h, i, &v);
		if (v) only = 0;
	}
	numaDestroy(&h);
	return only;
}

// fm_encode encodes a page image for a PDF: bilevel as CCITT G4, anything else as
// JPEG at quality. *g4 tells which; the caller frees *data.
static int fm_encode(PIX *pix, int quality, int *g4, unsigned char **data, size_t *n, int *w, int *h, int *spp) {
	PIX *p = pixGetColormap(pix) ? pixRemoveColormap(pix, REMOVE_CMAP_BASED_ON_SRC) : pixClone(pix);
	if (p == NULL) return -1;
	if (pixGetDepth(p) == 8 && fm_two_levels(p)) {
		PIX *b = pixThresholdToBinary(p, 128);
		pixDestroy(&p);
		if ((p = b) == NULL) return -1;
	}
	int d = pixGetDepth(p);
	if (d != 1 && d != 8 && d != 32) {
		PIX *c = pixConvertTo8(p, 0);
		pixDestroy(&p);
		if ((p = c) == NULL) return -1;
		d = 8;
	}
	*g4 = d == 1;
	L_COMP_DATA *cid = NULL;
	int r = pixGenerateCIData(p, *g4 ? L_G4_ENCODE : L_JPEG_ENCODE, quality, 0, &cid);
	pixDestroy(&p);
	if (r || cid == NULL || cid->datacomp == NULL) { l_CIDataDestroy(&cid); return -1; }
	*data = malloc(cid->nbytescomp);
	if (*data == NULL) { l_CIDataDestroy(&cid); return -1; }
	memcpy(*data, cid->datacomp, cid->nbytescomp);
	*n = cid->nbytescomp; *w = cid->w; *h = cid->h; *spp = cid->spp;
	l_CIDataDestroy(&cid);
	return 0;
}

static void fm_quiet(void) { setMsgSeverity(L_SEVERITY_NONE); }

// fm_trim gives the C heap's free memory back to the kernel.
static void fm_trim(void) { malloc_trim(0); }

// fm_pix_from copies a page rendered in memory into a new PIX, laid out as leptonica
// reads the same pixels from a PNG: one gray byte a pixel as 8 bpp, or R, G, B and an
// unused byte as 32 bpp with 3 samples a pixel and the alpha byte zero.
static PIX *fm_pix_from(const unsigned char *src, int w, int h, int stride, int gray) {
	PIX *pix = pixCreate(w, h, gray ? 8 : 32);
	if (pix == NULL) return NULL;
	l_uint32 *data = pixGetData(pix);
	int wpl = pixGetWpl(pix);
	for (int y = 0; y < h; y++) {
		const unsigned char *s = src + (size_t)y * stride;
		l_uint32 *line = data + (size_t)y * wpl;
		if (gray) {
			memcpy(line, s, w); // in byte order; swapped into leptonica's words below
		} else {
			for (int x = 0; x < w; x++, s += 4)
				line[x] = ((l_uint32)s[0] << L_RED_SHIFT) | ((l_uint32)s[1] << L_GREEN_SHIFT) | ((l_uint32)s[2] << L_BLUE_SHIFT);
		}
	}
	if (gray) pixEndianByteSwap(pix);
	else pixSetSpp(pix, 3);
	return pix;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/enginelib"
	"github.com/filemill/filemill/jobs/ops/internal/imagepdf"
)

// loadTesseract loads the engines' libraries once, and quiets leptonica, which would
// print to stderr on bad input.
var loadTesseract = sync.OnceValue(func() error {
	if err := enginelib.Load(); err != nil {
		return err
	}
	C.fm_quiet()
	return nil
})

// tessVersion is libtesseract's version.
func tessVersion() string {
	if err := loadTesseract(); err != nil {
		return "(not loaded: " + err.Error() + ")"
	}
	return C.GoString(C.TessVersion())
}

// api is one initialised tesseract instance: its language data is loaded once and
// reused page after page. It is not safe for concurrent use.
type api struct {
	h     *C.TessBaseAPI
	langs string
}

func newAPI(datapath, langs string) (*api, error) {
	if err := loadTesseract(); err != nil {
		return nil, err
	}
	h := C.TessBaseAPICreate()
	if h == nil {
		return nil, errors.New("tesseract: cannot create an instance")
	}
	cdp := C.CString(datapath)
	defer C.free(unsafe.Pointer(cdp))
	cl := C.CString(langs)
	defer C.free(unsafe.Pointer(cl))
	if C.TessBaseAPIInit3(h, cdp, cl) != 0 {
		C.TessBaseAPIDelete(h)
		return nil, fmt.Errorf("tesseract: cannot load language data %q from %s", langs, datapath)
	}
	a := &api{h: h, langs: langs}
	// Debug output and the "Empty page!!" notice go nowhere.
	a.set("debug_file", "/dev/null")
	return a, nil
}

func (a *api) set(name, value string) {
	cn, cv := C.CString(name), C.CString(value)
	C.TessBaseAPISetVariable(a.h, cn, cv)
	C.free(unsafe.Pointer(cn))
	C.free(unsafe.Pointer(cv))
}

func (a *api) close() {
	C.TessBaseAPIEnd(a.h)
	C.TessBaseAPIDelete(a.h)
}

// Word is one recognised word with its box in pixels of the page image.
type Word struct {
	Text       string  `json:"text"`
	Confidence float64 `json:"confidence"` // 0–100
	BBox       [4]int  `json:"bbox"`       // left, top, right, bottom
}

// pageResult is what one page gives.
type pageResult struct {
	text          string
	words         []Word
	psm           int // the segmentation mode that gave the text
	width, height int
	// ppi is the resolution tesseract worked at: the one it was given, or its estimate.
	ppi float64
	// layer is the page's words laid out for a text layer (when a PDF is wanted).
	layer []layerWord
	// image is the page image encoded for a PDF page (when one is made from it).
	image *imagepdf.Image
	// place maps the recognised image's unit square onto its PDF page (user space);
	// nil until the page's place is known.
	place *[6]float64
	// hasText is true when the PDF page already draws text of its own.
	hasText bool
}

// pageWant says what a page's recognition should give besides its text.
type pageWant struct {
	words  bool // words with boxes and confidences
	layer  bool // words laid out for a text layer
	encode bool // the page image encoded for a PDF page
	// memory bounds what recognising the page may take, in bytes (0: no bound),
	// estimated from its pixels before tesseract starts (recognitionBytes).
	memory int64
}

// bytesPerPixel is what tesseract's recognition of a page takes per pixel of its
// image, beyond the instance's own language data, rounded up from what was measured
// (peak resident memory of tesseract 5.3 on 8–74 MP images): about 4 bytes for a page
// of dense text, 12 for noise (every speck a blob).
const bytesPerPixel = 16

// recognitionBytes estimates the memory recognising a width×height page takes.
func recognitionBytes(width, height int) int64 {
	return int64(width) * int64(height) * bytesPerPixel
}

// maxTessSide is the longest side, in pixels, tesseract's layout analysis takes: it
// refuses a longer image ("Image too large") and the recognition fails.
const maxTessSide = 32767

var (
	errCancelled       = errors.New("tesseract: recognition cancelled")
	errUnreadableImage = errors.New("tesseract: the image cannot be read")
)

// psmAuto is tesseract's fully automatic page segmentation; a page that comes back
// empty is tried again with the sparse-text modes, sparse text (11) then one uniform
// block (6), which find text the layout analysis missed (spreadsheets, labels).
const psmAuto = 3

var retryPSMs = []int{11, 6}

// Bitmap is a page rendered in memory: Gray has one byte a pixel, otherwise four, R,
// G, B and an unused byte. Rows are Stride bytes apart.
type Bitmap struct {
	Width, Height, Stride int
	Gray                  bool
	Pix                   []byte
}

// valid reports whether Pix holds the pixels the sizes promise.
func (b *Bitmap) valid() bool {
	bpp := 4
	if b.Gray {
		bpp = 1
	}
	return b.Width > 0 && b.Height > 0 && b.Stride >= b.Width*bpp &&
		int64(len(b.Pix)) >= int64(b.Stride)*int64(b.Height-1)+int64(b.Width*bpp)
}

// pageImage is where a page's pixels come from: an image file tesseract decodes, a
// JPEG in memory (a scan's page image as the PDF stores it), or a page already
// decoded or rendered in memory.
type pageImage struct {
	path   string
	jpeg   []byte
	bitmap *Bitmap
}

// pix makes the page's PIX, which the caller destroys.
func (img pageImage) pix() (*C.PIX, error) {
	switch {
	case img.bitmap != nil:
		b := img.bitmap
		if !b.valid() {
			return nil, errUnreadableImage
		}
		gray := C.int(0)
		if b.Gray {
			gray = 1
		}
		pix := C.fm_pix_from((*C.uchar)(unsafe.Pointer(&b.Pix[0])), C.int(b.Width), C.int(b.Height), C.int(b.Stride), gray)
		if pix == nil {
			return nil, errors.New("tesseract: no memory for the page image")
		}
		return pix, nil
	case img.jpeg != nil:
		if len(img.jpeg) == 0 {
			return nil, errUnreadableImage
		}
		data := C.CBytes(img.jpeg)
		defer C.free(data)
		pix := C.pixReadMem((*C.l_uint8)(data), C.size_t(len(img.jpeg)))
		if pix == nil {
			return nil, errUnreadableImage
		}
		return pix, nil
	}
	cpath := C.CString(img.path)
	defer C.free(unsafe.Pointer(cpath))
	pix := C.pixRead(cpath)
	if pix == nil {
		return nil, errUnreadableImage
	}
	return pix, nil
}

// page recognises img, retrying an empty page with the sparse-text modes. dpi is the
// image's resolution when known, else 0 (tesseract reads it from the file or
// estimates it).
func (a *api) page(ctx context.Context, img pageImage, dpi int, want pageWant) (*pageResult, error) {
	res, enc, err := a.read(ctx, img, dpi, want)
	if err != nil {
		return nil, err
	}
	if enc != nil {
		res.image = enc.pdfImage()
	}
	return res, nil
}

func (a *api) usable() bool      { return true }
func (a *api) languages() string { return a.langs }

// read is page, with the page image (when want.encode) as encoded, not yet made a PDF
// image: what a helper process sends back.
func (a *api) read(ctx context.Context, img pageImage, dpi int, want pageWant) (*pageResult, *encodedImage, error) {
	pix, err := img.pix()
	if err != nil {
		return nil, nil, err
	}
	defer C.pixDestroy(&pix)
	if want.memory > 0 && recognitionBytes(int(C.pixGetWidth(pix)), int(C.pixGetHeight(pix))) > want.memory {
		// tesseract runs in the worker, where no per-job bound holds it: a page is
		// refused before recognition when its estimate is past the job's share.
		return nil, nil, domain.ResourceLimit(domain.LimitMemory, want.memory)
	}
	defer C.TessBaseAPIClear(a.h)

	res := &pageResult{psm: psmAuto}
	for _, psm := range append([]int{psmAuto}, retryPSMs...) {
		if err := a.recognize(ctx, pix, psm, dpi); err != nil {
			return nil, nil, err
		}
		res.psm = psm
		res.text = ""
		if t := C.TessBaseAPIGetUTF8Text(a.h); t != nil {
			res.text = C.GoString(t)
			C.TessDeleteText(t)
		}
		if strings.TrimSpace(res.text) != "" {
			break
		}
	}
	res.width, res.height = int(C.pixGetWidth(pix)), int(C.pixGetHeight(pix))
	res.ppi = float64(C.TessBaseAPIGetSourceYResolution(a.h))
	if want.words || want.layer {
		res.words, res.layer = a.collect(want.words, want.layer, res.ppi)
	}
	var enc *encodedImage
	if want.encode {
		if enc, err = encode(pix); err != nil {
			return nil, nil, err
		}
	}
	return res, enc, nil
}

// jpegQuality is what a page image that must be re-encoded, and is not bilevel, is
// written at: a photograph's quality, well above what text needs to stay sharp.
const jpegQuality = 85

// encodedImage is a page image encoded for a PDF page: CCITT G4 when G4, else JPEG
// of RGB or gray samples.
type encodedImage struct {
	Data          []byte
	Width, Height int
	G4, RGB       bool
}

// encode encodes a page image for a PDF page: CCITT G4 when it is bilevel, else JPEG.
func encode(pix *C.PIX) (*encodedImage, error) {
	var g4, w, h, spp C.int
	var data *C.uchar
	var n C.size_t
	if C.fm_encode(pix, jpegQuality, &g4, &data, &n, &w, &h, &spp) != 0 {
		return nil, errors.New("tesseract: cannot encode the page image")
	}
	defer C.free(unsafe.Pointer(data))
	return &encodedImage{Data: C.GoBytes(unsafe.Pointer(data), C.int(n)), Width: int(w), Height: int(h), G4: g4 != 0, RGB: spp == 3}, nil
}

// pdfImage is the image as a PDF image object.
func (e *encodedImage) pdfImage() *imagepdf.Image {
	img := &imagepdf.Image{Width: e.Width, Height: e.Height, Data: e.Data, BitsPerComponent: 8, Filter: filter.DCT, ColorSpace: "DeviceGray"}
	switch {
	case e.G4:
		img.Filter, img.BitsPerComponent = filter.CCITTFax, 1
		img.DecodeParms = types.Dict{"K": types.Integer(-1), "Columns": types.Integer(e.Width), "Rows": types.Integer(e.Height)}
	case e.RGB:
		img.ColorSpace = "DeviceRGB"
	}
	return img
}

func (a *api) recognize(ctx context.Context, pix *C.PIX, psm, dpi int) error {
	C.TessBaseAPISetPageSegMode(a.h, C.TessPageSegMode(psm))
	C.TessBaseAPISetImage2(a.h, pix)
	if dpi > 0 {
		C.TessBaseAPISetSourceResolution(a.h, C.int(dpi))
	}
	// The cancel flag lives in C memory: tesseract polls it while it works, and the
	// context sets it the moment it ends.
	flag := (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(flag))
	stop := context.AfterFunc(ctx, func() { atomic.StoreInt32((*int32)(unsafe.Pointer(flag)), 1) })
	rc := C.fm_recognize(a.h, flag)
	stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	if rc != 0 {
		// Not our cancel: tesseract gave up on this image, and would again.
		return errors.Join(errCancelled, domain.Errorf(domain.CodeUnsupportedInput, "text recognition could not read the page"))
	}
	return nil
}

// collect walks the recognised words once: as words with boxes and confidences, and
// laid out for a text layer (each word on its line's baseline, as tesseract's own PDF
// renderer places it).
func (a *api) collect(wantWords, wantLayer bool, ppi float64) ([]Word, []layerWord) {
	it := C.TessBaseAPIGetIterator(a.h)
	if it == nil {
		return nil, nil
	}
	defer C.TessResultIteratorDelete(it)
	pit := C.TessResultIteratorGetPageIterator(it)
	var (
		words []Word
		layer []layerWord
		line  [4]int
		block = -1
	)
	for {
		if C.TessPageIteratorIsAtBeginningOf(pit, C.RIL_BLOCK) != 0 {
			block++
		}
		if C.TessPageIteratorIsAtBeginningOf(pit, C.RIL_TEXTLINE) != 0 {
			var x1, y1, x2, y2 C.int
			C.TessPageIteratorBaseline(pit, C.RIL_TEXTLINE, &x1, &y1, &x2, &y2)
			line = clipBaseline(ppi, [4]int{int(x1), int(y1), int(x2), int(y2)})
		}
		if t := C.TessResultIteratorGetUTF8Text(it, C.RIL_WORD); t != nil {
			text := C.GoString(t)
			C.TessDeleteText(t)
			if text != "" && wantWords {
				w := Word{Text: text, Confidence: float64(C.TessResultIteratorConfidence(it, C.RIL_WORD))}
				var l, tp, r, b C.int
				if C.TessPageIteratorBoundingBox(pit, C.RIL_WORD, &l, &tp, &r, &b) != 0 {
					w.BBox = [4]int{int(l), int(tp), int(r), int(b)}
				}
				words = append(words, w)
			}
			if text != "" && wantLayer {
				lw := layerWord{text: text, block: block, line: line}
				var x1, y1, x2, y2 C.int
				C.TessPageIteratorBaseline(pit, C.RIL_WORD, &x1, &y1, &x2, &y2)
				lw.base = [4]int{int(x1), int(y1), int(x2), int(y2)}
				var bold, italic, underlined, mono, serif, smallcaps C.BOOL
				var size, font C.int
				C.TessResultIteratorWordFontAttributes(it, &bold, &italic, &underlined, &mono, &serif, &smallcaps, &size, &font)
				lw.pointSize = int(size)
				var orient C.TessOrientation
				var dir C.TessWritingDirection
				var order C.TessTextlineOrder
				var deskew C.float
				C.TessPageIteratorOrientation(pit, &orient, &dir, &order, &deskew)
				lw.rtl = dir == C.WRITING_DIRECTION_RIGHT_TO_LEFT
				lw.lineEnd = C.TessPageIteratorIsAtFinalElement(pit, C.RIL_TEXTLINE, C.RIL_WORD) != 0
				layer = append(layer, lw)
			}
		}
		if C.TessResultIteratorNext(it, C.RIL_WORD) == 0 {
			return words, layer
		}
	}
}

// trimHeap returns the C heap's free memory (what tesseract freed) to the kernel: a
// helper's memory cgroup then holds only what the helper keeps between pages.
func trimHeap() { C.fm_trim() }

// ompThreadLimit is OpenMP's thread limit in this process (OMP_THREAD_LIMIT).
func ompThreadLimit() int { return int(C.fm_thread_limit()) }
