package ocr

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/memcg"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// A recognition helper is this program started again with helperLangsEnv set: a
// process that loads tesseract for one language set and recognises the pages it is
// sent, one at a time, over its standard input and output. Each helper lives in a
// memory cgroup of its own, bound before each page to what it held once loaded plus
// the page's share of the job's memory, so the kernel measures what tesseract takes
// and kills the helper, not the worker, when a page needs more.
const (
	helperLangsEnv = "FILEMILL_OCR_HELPER"
	helperDataEnv  = "FILEMILL_OCR_TESSDATA"
)

// helperStartTimeout bounds a helper's start and language data load.
const helperStartTimeout = time.Minute

// A process started as a helper serves and exits before the program's main (or a
// test binary's tests) run. Whatever links this package can be its own helper.
func init() {
	if langs := os.Getenv(helperLangsEnv); langs != "" {
		os.Exit(serveHelper(os.Getenv(helperDataEnv), langs, os.Stdin, os.Stdout))
	}
}

// helperRequest is one page to recognise.
type helperRequest struct {
	Path                 string
	JPEG                 []byte
	Bitmap               *Bitmap
	DPI                  int
	Words, Layer, Encode bool
}

// Kinds of failure a helper reports besides a message.
const (
	failUnreadable = "unreadable" // errUnreadableImage
	failGaveUp     = "gave_up"    // tesseract gave up on the page by itself
)

// helperReply is a helper's answer: ready (once, after loading), or a page's result.
type helperReply struct {
	Ready bool
	Err   string
	Fail  string

	Text          string
	Words         []Word
	PSM           int
	Width, Height int
	PPI           float64
	Layer         []helperLayerWord
	Image         *encodedImage
}

type helperLayerWord struct {
	Text       string
	Block      int
	Line, Base [4]int
	PointSize  int
	RTL        bool
	LineEnd    bool
}

// serveHelper is a helper's life: load, say ready, then answer pages until its input
// ends. It returns the process's exit code.
func serveHelper(datapath, langs string, in io.Reader, out io.Writer) int {
	enc, dec := gob.NewEncoder(out), gob.NewDecoder(in)
	a, err := newAPI(datapath, langs)
	if err != nil {
		_ = enc.Encode(helperReply{Err: err.Error()})
		return 1
	}
	if err := enc.Encode(helperReply{Ready: true}); err != nil {
		return 1
	}
	for {
		var req helperRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "ocr helper:", err)
			return 1
		}
		rep := helperAnswer(a, req)
		// The page's memory goes back to the kernel before the next page's bound is
		// set from what the helper holds.
		req = helperRequest{}
		debug.FreeOSMemory()
		trimHeap()
		if err := enc.Encode(rep); err != nil {
			return 1
		}
		if rep.Fail == failGaveUp {
			// The instance may be left mid-page: the parent starts another helper.
			return 0
		}
	}
}

func helperAnswer(a *api, req helperRequest) helperReply {
	img := pageImage{path: req.Path, jpeg: req.JPEG, bitmap: req.Bitmap}
	res, enc, err := a.read(context.Background(), img, req.DPI, pageWant{words: req.Words, layer: req.Layer, encode: req.Encode})
	switch {
	case errors.Is(err, errUnreadableImage):
		return helperReply{Err: err.Error(), Fail: failUnreadable}
	case errors.Is(err, errCancelled):
		return helperReply{Err: err.Error(), Fail: failGaveUp}
	case err != nil:
		return helperReply{Err: err.Error()}
	}
	rep := helperReply{Text: res.text, Words: res.words, PSM: res.psm, Width: res.width, Height: res.height, PPI: res.ppi, Image: enc}
	for _, w := range res.layer {
		rep.Layer = append(rep.Layer, helperLayerWord{Text: w.text, Block: w.block, Line: w.line, Base: w.base,
			PointSize: w.pointSize, RTL: w.rtl, LineEnd: w.lineEnd})
	}
	return rep
}

// result is the page's result, or its failure as the in-process recognizer gives it.
func (r *helperReply) result() (*pageResult, error) {
	switch {
	case r.Fail == failUnreadable:
		return nil, errUnreadableImage
	case r.Fail == failGaveUp:
		return nil, errors.Join(errCancelled, domain.Errorf(domain.CodeUnsupportedInput, "text recognition could not read the page"))
	case r.Err != "":
		return nil, errors.New(r.Err)
	}
	res := &pageResult{text: r.Text, words: r.Words, psm: r.PSM, width: r.Width, height: r.Height, ppi: r.PPI}
	for _, w := range r.Layer {
		res.layer = append(res.layer, layerWord{text: w.Text, block: w.Block, line: w.Line, base: w.Base,
			pointSize: w.PointSize, rtl: w.RTL, lineEnd: w.LineEnd})
	}
	if r.Image != nil {
		res.image = r.Image.pdfImage()
	}
	return res, nil
}

// helper is a running recognition helper, seen from the worker. It is not safe for
// concurrent use.
type helper struct {
	langs string
	proc  *runner.Process
	in    io.WriteCloser
	enc   *gob.Encoder
	dec   *gob.Decoder
	mem   *memcg.Group
	base  int64 // the group's usage once loaded: language data, runtime, libraries

	broken  bool // not to be used again
	stopped bool
}

var helperSeq atomic.Int64

// startHelper starts a helper for langs in a new group of parent.
func startHelper(exe, datapath, langs string, parent *memcg.Parent) (*helper, error) {
	mem, err := parent.NewGroup("ocr-"+strconv.FormatInt(helperSeq.Add(1), 10), 0)
	if err != nil {
		return nil, fmt.Errorf("ocr: memory cgroup: %w", err)
	}
	proc, in, out, err := runner.StartPiped(runner.Cmd{Path: exe, Env: helperEnv(datapath, langs), Cgroup: mem.Dir()})
	if err != nil {
		_ = mem.Remove()
		return nil, fmt.Errorf("ocr: recognition helper: %w", err)
	}
	h := &helper{langs: langs, proc: proc, in: in, enc: gob.NewEncoder(in), dec: gob.NewDecoder(out), mem: mem}
	ready := make(chan error, 1)
	go func() {
		var r helperReply
		err := h.dec.Decode(&r)
		switch {
		case err != nil:
			err = fmt.Errorf("ocr: recognition helper did not start: %w (stderr: %s)", err, strings.TrimSpace(proc.Stderr()))
		case r.Err != "":
			err = errors.New(r.Err)
		case !r.Ready:
			err = errors.New("ocr: recognition helper: no ready message")
		}
		ready <- err
	}()
	timer := time.NewTimer(helperStartTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("ocr: recognition helper did not load %q within %s", langs, helperStartTimeout)
	}
	if err == nil {
		h.base, err = mem.Usage()
	}
	if err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// helperEnv is a helper's environment: a program's (runner.ProgramEnv) and what makes
// it a helper. Pages run one at a time on one core.
func helperEnv(datapath, langs string) []string {
	return runner.ProgramEnv(helperLangsEnv+"="+langs, helperDataEnv+"="+datapath, "OMP_THREAD_LIMIT=1", "GOMAXPROCS=1")
}

func (h *helper) languages() string { return h.langs }
func (h *helper) usable() bool      { return !h.broken }

// page recognises img in the helper within want.memory beyond what the helper holds
// loaded (no bound when 0). A page past it fails resource_limit_exceeded and the
// helper, killed by the kernel, is not used again; so is one stopped by ctx.
func (h *helper) page(ctx context.Context, img pageImage, dpi int, want pageWant) (*pageResult, error) {
	limit := int64(0)
	if want.memory > 0 {
		limit = h.base + want.memory
	}
	if err := h.mem.SetLimit(limit); err != nil {
		h.broken = true
		return nil, err
	}
	kills, err := h.mem.OOMKills()
	if err != nil {
		h.broken = true
		return nil, err
	}
	req := helperRequest{Path: img.path, JPEG: img.jpeg, Bitmap: img.bitmap, DPI: dpi, Words: want.words, Layer: want.layer, Encode: want.encode}
	type answer struct {
		r   helperReply
		err error
	}
	c := make(chan answer, 1)
	go func() {
		var a answer
		if a.err = h.enc.Encode(req); a.err == nil {
			a.err = h.dec.Decode(&a.r)
		}
		c <- a
	}()
	select {
	case a := <-c:
		if a.err != nil {
			// The kill count goes with the group: read it before the helper is closed.
			now, _ := h.mem.OOMKills()
			h.close()
			if now > kills {
				return nil, domain.ResourceLimit(domain.LimitMemory, want.memory)
			}
			return nil, fmt.Errorf("ocr: recognition helper: %w (stderr: %s)", a.err, strings.TrimSpace(h.proc.Stderr()))
		}
		return a.r.result()
	case <-ctx.Done():
		h.close()
		<-c
		return nil, ctx.Err()
	}
}

// close kills the helper, which keeps nothing worth waiting for, and removes its group.
func (h *helper) close() {
	if h.stopped {
		return
	}
	h.stopped, h.broken = true, true
	h.proc.Kill()
	_ = h.in.Close()
	if err := h.mem.Remove(); err != nil {
		slog.Warn("ocr: removing a recognition helper's memory cgroup", "error", err.Error())
	}
}
