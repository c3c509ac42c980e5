package image

// The C side is jobs/ops/internal/vips (vips.c, vips.h), the one libvips binding;
// importing that package links it in, and its Init is the one start of libvips.

/*
#cgo pkg-config: vips libwebp
#cgo CFLAGS: -I${SRCDIR}/../internal/vips
#include "vips.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

// libvips is process-wide: it is started once (by the shared binding, for every
// engine), and its thread count and operation cache are global settings.
func startVips() error {
	if err := vips.Init(); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

func configureVips(threads, cacheOps int, cacheMem int64, cacheFiles int) {
	C.fm_configure(C.int(threads), C.int(cacheOps), C.size_t(cacheMem), C.int(cacheFiles))
}

func vipsVersion() string {
	return "libvips " + vips.Version()
}

// vipsError takes libvips' error buffer (shared by all threads, so under concurrent use
// it may hold another conversion's message too: it only goes to logs).
func vipsError() error { return vips.LastError() }

// header is what a file's header tells before any pixel is decoded.
type header struct {
	Width, PageHeight, Height int
	Pages                     int // pages or frames in the file
	Orientation               int
	Swap                      bool
	Bands                     int
	HasAlpha, HasICC, CMYK    bool
	Loader                    string
}

func (h header) frames() int {
	if h.PageHeight <= 0 {
		return 1
	}
	return h.Height / h.PageHeight
}

func toHeader(c *C.FmHeader) header {
	return header{
		Width: int(c.width), PageHeight: int(c.page_height), Height: int(c.height), Pages: int(c.n_pages),
		Orientation: int(c.orientation), Swap: c.swap != 0, Bands: int(c.bands),
		HasAlpha: c.has_alpha != 0, HasICC: c.has_icc != 0, CMYK: c.cmyk != 0,
		Loader: C.GoString(&c.loader[0]),
	}
}

func loaderAllowed(path string) bool {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return C.fm_loader_allowed(cp) != 0
}

func readHeaderFile(pathOpts string) (header, error) {
	cp := C.CString(pathOpts)
	defer C.free(unsafe.Pointer(cp))
	var h C.FmHeader
	if C.fm_header_file(cp, &h) != 0 {
		return header{}, vipsError()
	}
	return toHeader(&h), nil
}

// pipeline owns the images of one conversion: it releases them all at the end, and
// kills their evaluation when the job's context ends or libvips' memory grew past the
// job's bound. libvips stops between tiles: the kill is seen at the next tile any
// thread computes, so a conversion stops within one tile's work of being killed.
type pipeline struct {
	mu      sync.Mutex
	images  []*C.VipsImage
	watched []*C.VipsImage
	killed  bool
	budget  *C.FmBudget // read by libvips' threads: killed once, freed by close
}

// newPipeline starts a conversion whose libvips memory may grow by at most memMax
// bytes (0: no bound).
func newPipeline(memMax int64) *pipeline {
	return &pipeline{budget: C.fm_budget_new(C.size_t(max(memMax, 0)))}
}

// overMemory reports whether the conversion was stopped for its memory bound.
func (p *pipeline) overMemory() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.budget != nil && C.fm_budget_over(p.budget) != 0
}

func (p *pipeline) keep(im *C.VipsImage) *C.VipsImage {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.images = append(p.images, im)
	if p.killed {
		C.fm_set_kill(im)
	}
	return im
}

// watch has every evaluation reading im stop once the pipeline is killed, from
// libvips' own progress callback: the saver's images, made inside libvips from im,
// are beyond keep's reach.
func (p *pipeline) watch(im vimg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	C.fm_watch_budget(im, p.budget)
	p.watched = append(p.watched, im)
}

// kill stops any evaluation running on the pipeline's images; the running libvips call
// returns an error.
func (p *pipeline) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.budget == nil {
		return // closed: the context ended as the conversion did
	}
	p.killed = true
	C.fm_budget_kill(p.budget)
	for _, im := range p.images {
		C.fm_set_kill(im)
	}
}

func (p *pipeline) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, im := range p.watched {
		C.fm_unwatch_budget(im, p.budget)
	}
	for _, im := range p.images {
		C.g_object_unref(C.gpointer(im))
	}
	p.images, p.watched = nil, nil
	C.fm_budget_free(p.budget)
	p.budget = nil
}

// vimg is an image of a pipeline.
type vimg = *C.VipsImage

func width(im vimg) int  { return int(im.Xsize) }
func height(im vimg) int { return int(im.Ysize) }
func bands(im vimg) int  { return int(im.Bands) }

func hasField(im vimg, name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.fm_has_field(im, cn) != 0
}

func (p *pipeline) result(out vimg, rc C.int) (vimg, error) {
	if rc != 0 {
		return nil, vipsError()
	}
	return p.keep(out), nil
}

func (p *pipeline) thumbnailFile(pathOpts string, w, h int, exportProfile string) (vimg, error) {
	cp := C.CString(pathOpts)
	defer C.free(unsafe.Pointer(cp))
	cprof := C.CString(exportProfile)
	defer C.free(unsafe.Pointer(cprof))
	var out vimg
	return p.result(out, C.fm_thumbnail_file(cp, &out, C.int(w), C.int(h), cprof))
}

func (p *pipeline) thumbnailImage(in vimg, w, h int) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_thumbnail_image(in, &out, C.int(w), C.int(h)))
}

// fromPixels makes an image from 8-bit interleaved sRGB(A) pixels (copied).
func (p *pipeline) fromPixels(pix []byte, w, h, nbands int) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_from_memory(unsafe.Pointer(&pix[0]), C.size_t(len(pix)), C.int(w), C.int(h), C.int(nbands), &out))
}

// copyMemory makes in whole in memory, once its pixels are known to fit the memory
// bound.
func (p *pipeline) copyMemory(in vimg) (vimg, error) {
	if C.fm_budget_admit(p.budget, in) != 0 {
		return nil, vipsError()
	}
	var out vimg
	return p.result(out, C.fm_copy_memory(in, &out))
}

func (p *pipeline) rot(in vimg, angle int) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_rot(in, &out, C.int(angle)))
}

func (p *pipeline) extract(in vimg, left, top, w, h int) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_extract(in, &out, C.int(left), C.int(top), C.int(w), C.int(h)))
}

// libvips' VipsInteresting values.
const (
	interestingEntropy   = C.VIPS_INTERESTING_ENTROPY
	interestingAttention = C.VIPS_INTERESTING_ATTENTION
)

func (p *pipeline) smartcrop(in vimg, w, h int, interesting int) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_smartcrop(in, &out, C.int(w), C.int(h), C.int(interesting)))
}

func (p *pipeline) embed(in vimg, x, y, w, h int, bg []float64) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_embed(in, &out, C.int(x), C.int(y), C.int(w), C.int(h), (*C.double)(unsafe.Pointer(&bg[0])), C.int(len(bg))))
}

func (p *pipeline) flatten(in vimg, bg []float64) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_flatten(in, &out, (*C.double)(unsafe.Pointer(&bg[0])), C.int(len(bg))))
}

func (p *pipeline) addAlpha(in vimg) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_addalpha(in, &out))
}

func (p *pipeline) toSRGB(in vimg) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_to_srgb(in, &out))
}

func (p *pipeline) join(frames []vimg) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_arrayjoin((**C.VipsImage)(unsafe.Pointer(&frames[0])), C.int(len(frames)), &out))
}

func (p *pipeline) finishMeta(in vimg, strip bool, pixelsPerMM float64, pageHeight int) (vimg, error) {
	var out vimg
	return p.result(out, C.fm_finish_meta(in, &out, cbool(strip), C.double(pixelsPerMM), C.int(pageHeight)))
}

// saveSettings are the encoder settings of one save; -1 keeps an encoder's default.
type saveSettings struct {
	format   int
	quality  int
	lossless bool
	effort   int
	strip    bool
	palette  bool
}

// Output format codes shared with vips.c.
const (
	fmtJPEG = C.FM_JPEG
	fmtPNG  = C.FM_PNG
	fmtWebP = C.FM_WEBP
	fmtAVIF = C.FM_AVIF
	fmtGIF  = C.FM_GIF
	fmtTIFF = C.FM_TIFF
)

func save(in vimg, path string, s saveSettings) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	o := C.FmSave{format: C.int(s.format), quality: C.int(s.quality), lossless: cbool(s.lossless),
		effort: C.int(s.effort), strip: cbool(s.strip), palette: cbool(s.palette)}
	if C.fm_save(in, cp, &o) != 0 {
		return vipsError()
	}
	return nil
}

// verifyFile reads an output back completely and returns its header.
func verifyFile(pathOpts string) (header, error) {
	cp := C.CString(pathOpts)
	defer C.free(unsafe.Pointer(cp))
	var h C.FmHeader
	if C.fm_verify(cp, &h) != 0 {
		return header{}, vipsError()
	}
	return toHeader(&h), nil
}

// verifyWebPFile decodes the still WebP at path in full and returns its size;
// animated reports an animation, left undecoded.
func verifyWebPFile(path string) (w, h int, animated bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false, err
	}
	if len(data) == 0 {
		return 0, 0, false, errors.New("empty WebP")
	}
	var cw, ch C.int
	switch C.fm_verify_webp(unsafe.Pointer(&data[0]), C.size_t(len(data)), &cw, &ch) {
	case 0:
		return int(cw), int(ch), false, nil
	case 1:
		return 0, 0, true, nil
	}
	return 0, 0, false, vipsError()
}

// threadDone frees what libvips keeps for the calling OS thread; call it at the end of
// a conversion, on the locked thread that ran it.
func threadDone() { C.fm_thread_done() }

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
