package ocr

/*
#cgo pkg-config: tesseract lept
#cgo LDFLAGS: -lgomp
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

static void fm_quiet(void) { setMsgSeverity(L_SEVERITY_NONE); }

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
	"sync/atomic"
	"unsafe"
)

func init() { C.fm_quiet() } // leptonica would print to stderr on bad input

// tessVersion is libtesseract's version.
func tessVersion() string { return C.GoString(C.TessVersion()) }

// api is one initialised tesseract instance: its language data is loaded once and
// reused page after page. It is not safe for concurrent use.
type api struct {
	h     *C.TessBaseAPI
	langs string
}

func newAPI(datapath, langs string) (*api, error) {
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
}

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

// pageImage is where a page's pixels come from: an image file tesseract decodes, or a
// page already rendered in memory.
type pageImage struct {
	path   string
	bitmap *Bitmap
}

// pix makes the page's PIX, which the caller destroys, and the name tesseract's
// searchable-PDF renderer reads the page image from. A bitmap needs no image file for
// recognition; only when a PDF is wanted is it written, losslessly, to pdfBase+".png".
func (img pageImage) pix(pdfBase string) (*C.PIX, string, error) {
	if img.bitmap == nil {
		cpath := C.CString(img.path)
		defer C.free(unsafe.Pointer(cpath))
		pix := C.pixRead(cpath)
		if pix == nil {
			return nil, "", errUnreadableImage
		}
		return pix, img.path, nil
	}
	b := img.bitmap
	if !b.valid() {
		return nil, "", errUnreadableImage
	}
	gray := C.int(0)
	if b.Gray {
		gray = 1
	}
	pix := C.fm_pix_from((*C.uchar)(unsafe.Pointer(&b.Pix[0])), C.int(b.Width), C.int(b.Height), C.int(b.Stride), gray)
	if pix == nil {
		return nil, "", errors.New("tesseract: no memory for the page image")
	}
	if pdfBase == "" {
		return pix, "", nil
	}
	name := pdfBase + ".png"
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.pixWrite(cname, pix, C.IFF_PNG) != 0 {
		C.pixDestroy(&pix)
		return nil, "", fmt.Errorf("tesseract: cannot write the page image %s", name)
	}
	return pix, name, nil
}

// page recognises img, retrying an empty page with the sparse-text modes. When
// pdfBase is not empty it also writes pdfBase+".pdf": the page image with an
// invisible text layer.
func (a *api) page(ctx context.Context, img pageImage, dpi int, wantWords bool, pdfBase, fontDir string) (*pageResult, error) {
	pix, name, err := img.pix(pdfBase)
	if err != nil {
		return nil, err
	}
	defer C.pixDestroy(&pix)
	defer C.TessBaseAPIClear(a.h)
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))

	res := &pageResult{psm: psmAuto}
	for _, psm := range append([]int{psmAuto}, retryPSMs...) {
		if err := a.recognize(ctx, pix, cname, psm, dpi); err != nil {
			return nil, err
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
	if wantWords {
		res.words = a.words()
	}
	if pdfBase != "" {
		if err := a.renderPDF(pdfBase, fontDir); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (a *api) recognize(ctx context.Context, pix *C.PIX, cname *C.char, psm, dpi int) error {
	C.TessBaseAPISetPageSegMode(a.h, C.TessPageSegMode(psm))
	C.TessBaseAPISetImage2(a.h, pix)
	C.TessBaseAPISetInputName(a.h, cname)
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
		return errCancelled
	}
	return nil
}

func (a *api) words() []Word {
	it := C.TessBaseAPIGetIterator(a.h)
	if it == nil {
		return nil
	}
	defer C.TessResultIteratorDelete(it)
	pit := C.TessResultIteratorGetPageIterator(it)
	var out []Word
	for {
		if t := C.TessResultIteratorGetUTF8Text(it, C.RIL_WORD); t != nil {
			w := Word{Text: C.GoString(t), Confidence: float64(C.TessResultIteratorConfidence(it, C.RIL_WORD))}
			C.TessDeleteText(t)
			var l, tp, r, b C.int
			if C.TessPageIteratorBoundingBox(pit, C.RIL_WORD, &l, &tp, &r, &b) != 0 {
				w.BBox = [4]int{int(l), int(tp), int(r), int(b)}
			}
			if w.Text != "" {
				out = append(out, w)
			}
		}
		if C.TessResultIteratorNext(it, C.RIL_WORD) == 0 {
			return out
		}
	}
}

// renderPDF writes the current page as base+".pdf" with its text layer.
func (a *api) renderPDF(base, fontDir string) error {
	cb, cd := C.CString(base), C.CString(fontDir)
	defer C.free(unsafe.Pointer(cb))
	defer C.free(unsafe.Pointer(cd))
	r := C.TessPDFRendererCreate(cb, cd, 0)
	if r == nil {
		return errors.New("tesseract: cannot create the PDF renderer")
	}
	defer C.TessDeleteResultRenderer(r)
	title := C.CString("")
	defer C.free(unsafe.Pointer(title))
	if C.TessResultRendererBeginDocument(r, title) == 0 ||
		C.TessResultRendererAddImage(r, a.h) == 0 ||
		C.TessResultRendererEndDocument(r) == 0 {
		return errors.New("tesseract: the PDF renderer failed")
	}
	return nil
}

// ompThreadLimit is OpenMP's thread limit in this process (OMP_THREAD_LIMIT).
func ompThreadLimit() int { return int(C.fm_thread_limit()) }
