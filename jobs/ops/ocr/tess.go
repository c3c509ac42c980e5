package ocr

/*
#cgo pkg-config: tesseract lept
#cgo LDFLAGS: -lgomp
#include <stdlib.h>
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

// page reads the image at path and recognises it, retrying an empty page with the
// sparse-text modes. When pdfBase is not empty it also writes pdfBase+".pdf": the
// page image with an invisible text layer (the renderer reads the image from path).
func (a *api) page(ctx context.Context, path string, dpi int, wantWords bool, pdfBase, fontDir string) (*pageResult, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	pix := C.pixRead(cpath)
	if pix == nil {
		return nil, errUnreadableImage
	}
	defer C.pixDestroy(&pix)
	defer C.TessBaseAPIClear(a.h)

	res := &pageResult{psm: psmAuto}
	for _, psm := range append([]int{psmAuto}, retryPSMs...) {
		if err := a.recognize(ctx, pix, cpath, psm, dpi); err != nil {
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

func (a *api) recognize(ctx context.Context, pix *C.PIX, cpath *C.char, psm, dpi int) error {
	C.TessBaseAPISetPageSegMode(a.h, C.TessPageSegMode(psm))
	C.TessBaseAPISetImage2(a.h, pix)
	C.TessBaseAPISetInputName(a.h, cpath)
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
