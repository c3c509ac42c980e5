package pdfium

import (
	"context"
	"errors"
	"fmt"
	"math"

	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/tetratelabs/wazero/api"

	"github.com/filemill/filemill/domain"
)

// instance is one PDFium WebAssembly instance held by one caller at a time.
type instance struct {
	pool *Pool
	pi   gopdfium.Pdfium
	mod  api.Module
	fns  map[string]api.Function
	// scratch is a small block of instance memory for out-parameters (boxes, matrices).
	scratch uint32
	// dead is set once a call failed inside the module (trap, deadline): the instance
	// is discarded on release rather than reused.
	dead     bool
	released bool
}

const scratchSize = 256

func (in *instance) init(ctx context.Context) error {
	r, err := in.call(ctx, "malloc", scratchSize)
	if err != nil {
		return err
	}
	if r == 0 {
		return errors.New("pdfium: out of memory")
	}
	in.scratch = uint32(r)
	return nil
}

// release returns the instance to the pool, or discards it when it failed or grew
// past RecycleBytes (WebAssembly memory never shrinks).
func (in *instance) release() {
	if in.released {
		return
	}
	in.released = true
	if !in.dead && in.scratch != 0 {
		if _, err := in.call(context.Background(), "free", uint64(in.scratch)); err != nil {
			in.dead = true
		}
	}
	if in.dead || int64(in.mod.Memory().Size()) > in.pool.cfg.RecycleBytes {
		_ = in.pi.Kill()
	} else {
		_ = in.pi.Close()
	}
	<-in.pool.slots
}

// call runs one PDFium export. The runtime does not watch ctx (see Pool); a failure
// inside the module (a trap: the memory ceiling, a PDFium abort) marks the instance
// dead so it is discarded.
func (in *instance) call(ctx context.Context, name string, args ...uint64) (uint64, error) {
	if in.dead {
		return 0, errors.New("pdfium: instance already failed")
	}
	f := in.fns[name]
	if f == nil {
		f = in.mod.ExportedFunction(name)
		if f == nil {
			return 0, fmt.Errorf("pdfium: no export %s", name)
		}
		in.fns[name] = f
	}
	res, err := f.Call(ctx, args...)
	if err != nil {
		in.dead = true
		if ctxErr := ctx.Err(); ctxErr != nil {
			return 0, ctxErr
		}
		// A trap is PDFium running out of its memory ceiling or tripping on the file.
		return 0, &domain.Error{Code: domain.CodeUnsupportedInput,
			Message: "the PDF needs more memory or work than this service allows, or is damaged beyond rendering"}
	}
	if len(res) == 0 {
		return 0, nil
	}
	return res[0], nil
}

// quick is call for a small export with no context to hand.
func (in *instance) quick(name string, args ...uint64) (uint64, error) {
	return in.call(context.Background(), name, args...)
}

func (in *instance) quickInt(name string, args ...uint64) (int, error) {
	r, err := in.quick(name, args...)
	return int(int32(uint32(r))), err
}

func (in *instance) callInt(ctx context.Context, name string, args ...uint64) (int, error) {
	r, err := in.call(ctx, name, args...)
	return int(int32(uint32(r))), err
}

func (in *instance) callF32(ctx context.Context, name string, args ...uint64) (float64, error) {
	r, err := in.call(ctx, name, args...)
	return float64(math.Float32frombits(uint32(r))), err
}

func (in *instance) callF64(ctx context.Context, name string, args ...uint64) (float64, error) {
	r, err := in.call(ctx, name, args...)
	return math.Float64frombits(r), err
}

func (in *instance) alloc(ctx context.Context, data []byte) (uint32, error) {
	r, err := in.call(ctx, "malloc", uint64(len(data)+1))
	if err != nil {
		return 0, err
	}
	if r == 0 {
		return 0, in.pool.outOfMemory()
	}
	buf := append(append(make([]byte, 0, len(data)+1), data...), 0)
	if !in.mod.Memory().Write(uint32(r), buf) {
		return 0, errors.New("pdfium: write outside instance memory")
	}
	return uint32(r), nil
}

func (in *instance) free(ptr uint32) {
	if ptr != 0 && !in.dead {
		_, _ = in.call(context.Background(), "free", uint64(ptr))
	}
}

func (in *instance) f32(off uint32) float64 {
	v, _ := in.mod.Memory().ReadFloat32Le(off)
	return float64(v)
}

func (in *instance) i32(off uint32) int {
	v, _ := in.mod.Memory().ReadUint32Le(off)
	return int(int32(v))
}

// PDFium's FPDF_GetLastError codes.
const (
	errUnknown  = 1
	errFile     = 2
	errFormat   = 3
	errPassword = 4
	errSecurity = 5
	errPage     = 6
)

// openPath opens the PDF at path; errors are *domain.Error for the file's faults.
func (in *instance) openPath(ctx context.Context, path string) (uint64, error) {
	p, err := in.alloc(ctx, []byte(path))
	if err != nil {
		return 0, err
	}
	defer in.free(p)
	doc, err := in.call(ctx, "FPDF_LoadDocument", uint64(p), 0)
	if err != nil {
		return 0, err
	}
	if doc == 0 {
		return 0, in.loadError(ctx)
	}
	return doc, nil
}

// openMemory opens a PDF held in memory (the built-in check page). The bytes at ptr
// must stay allocated while the document is open: PDFium reads them lazily.
func (in *instance) openMemory(ctx context.Context, data []byte) (doc uint64, ptr uint32, err error) {
	p, err := in.alloc(ctx, data)
	if err != nil {
		return 0, 0, err
	}
	doc, err = in.call(ctx, "FPDF_LoadMemDocument", uint64(p), uint64(len(data)), 0)
	if err != nil {
		return 0, 0, err
	}
	if doc == 0 {
		in.free(p)
		return 0, 0, in.loadError(ctx)
	}
	return doc, p, nil
}

func (in *instance) loadError(ctx context.Context) error {
	code, err := in.call(ctx, "FPDF_GetLastError")
	if err != nil {
		return err
	}
	switch code {
	case errPassword:
		return &domain.Error{Code: domain.CodeEncryptedFile, Message: "the PDF is password-protected"}
	case errSecurity:
		return &domain.Error{Code: domain.CodeEncryptedFile, Message: "the PDF is protected by a security scheme this service cannot open"}
	case errFile:
		return errors.New("pdfium: the input file cannot be opened")
	default:
		return &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF cannot be read: it is damaged or not a PDF"}
	}
}

func (in *instance) closeDocument(doc uint64) {
	if doc != 0 && !in.dead {
		_, _ = in.call(context.Background(), "FPDF_CloseDocument", doc)
	}
}
