package pdfium

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"sync"
	"time"

	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/vips"
)

// Config sizes the pool and bounds what one document may cost. Zero fields take the
// defaults.
type Config struct {
	// Instances is how many PDFium instances run at once (each uses one core while it
	// renders); default GOMAXPROCS.
	Instances int
	// MaxMemoryBytes caps one instance's memory, and so one job's in PDFium: a bitmap
	// or buffer that does not fit fails resource_limit_exceeded (a trap deep inside
	// PDFium, unsupported_input). Default 1 GiB.
	MaxMemoryBytes int64
	// RecycleBytes: an instance whose memory grew past this is replaced when released,
	// so one huge document does not pin its memory for ever. Default 256 MiB.
	RecycleBytes int64
	// MaxPages refuses documents with more pages (unsupported_input). Default 10,000.
	MaxPages int
	// MaxPixels bounds one rendered page (width×height). Default 100 million.
	MaxPixels int64
	// CompilationCacheDir keeps the compiled PDFium module between runs: start-up drops
	// from about 3 s to 0.1 s. Empty compiles in memory at first use.
	CompilationCacheDir string
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		Instances:      runtime.GOMAXPROCS(0),
		MaxMemoryBytes: 1 << 30,
		RecycleBytes:   256 << 20,
		MaxPages:       10_000,
		MaxPixels:      100_000_000,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Instances < 0:
		return errors.New("pdfium: Instances must not be negative")
	case c.MaxMemoryBytes < 0 || c.MaxMemoryBytes > 4<<30:
		return errors.New("pdfium: MaxMemoryBytes must be between 0 and 4 GiB (a WebAssembly instance addresses 4 GiB)")
	case c.RecycleBytes < 0:
		return errors.New("pdfium: RecycleBytes must not be negative")
	case c.MaxPages < 0:
		return errors.New("pdfium: MaxPages must not be negative")
	case c.MaxPixels < 0:
		return errors.New("pdfium: MaxPixels must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Instances <= 0 {
		c.Instances = d.Instances
	}
	if c.MaxMemoryBytes <= 0 {
		c.MaxMemoryBytes = d.MaxMemoryBytes
	}
	if c.RecycleBytes <= 0 {
		c.RecycleBytes = d.RecycleBytes
	}
	if c.MaxPages <= 0 {
		c.MaxPages = d.MaxPages
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = d.MaxPixels
	}
	return c
}

// GoPDFiumVersion is the go-pdfium release whose PDFium WebAssembly build runs here.
const GoPDFiumVersion = "v1.19.8"

// Pool runs PDFium instances. It starts on first use and is safe for concurrent use.
//
// The runtime could stop PDFium mid-call when a context ends, but that instruments
// every loop of the compiled code and makes rendering three times slower. Instead
// pages render progressively, pausing at PDFium's checkpoints (every hundred or so
// page objects), where the deadline is checked; text loops check it between calls.
// Loading a page parses its content in one call, which nothing stops: a page whose
// content takes long to parse holds its instance, past the deadline, until it is parsed.
type Pool struct {
	cfg   Config
	slots chan struct{} // one per busy instance: the pool's share of cores

	once     sync.Once
	startErr error
	pool     gopdfium.Pool

	mu     sync.Mutex
	closed bool
}

// New returns a pool; PDFium is compiled and started on first use (or by Start).
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Pool{cfg: cfg, slots: make(chan struct{}, cfg.Instances)}, nil
}

// Config returns the pool's effective settings.
func (p *Pool) Config() Config { return p.cfg }

// Version names the rasteriser, for workers to advertise.
func (p *Pool) Version() string {
	return "pdfium-wasm (go-pdfium " + GoPDFiumVersion + "), libvips " + vips.Version()
}

// Start compiles and starts PDFium now rather than on first use.
func (p *Pool) Start() error {
	p.once.Do(func() {
		rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(uint32(p.cfg.MaxMemoryBytes / 65536))
		if p.cfg.CompilationCacheDir != "" {
			cache, err := wazero.NewCompilationCacheWithDir(p.cfg.CompilationCacheDir)
			if err != nil {
				p.startErr = fmt.Errorf("pdfium: compilation cache %s: %w", p.cfg.CompilationCacheDir, err)
				return
			}
			rc = rc.WithCompilationCache(cache)
		}
		p.pool, p.startErr = webassembly.Init(webassembly.Config{
			MinIdle:      0,
			MaxIdle:      p.cfg.Instances,
			MaxTotal:     p.cfg.Instances,
			ReuseWorkers: true,
			// PDFium opens only the paths this package hands it; read-only all the same.
			FSConfig:      wazero.NewFSConfig().WithReadOnlyDirMount("/", "/"),
			RuntimeConfig: rc,
			Stdout:        io.Discard,
			Stderr:        io.Discard,
		})
		if p.startErr != nil {
			p.startErr = fmt.Errorf("pdfium: start: %w", p.startErr)
			return
		}
		p.startErr = vips.Init()
	})
	return p.startErr
}

// Close stops every instance. Documents still open fail their next call.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	// Past once.Do, a pool never started stays unstarted.
	p.once.Do(func() { p.startErr = errors.New("pdfium: pool is closed") })
	if p.pool != nil {
		return p.pool.Close()
	}
	return nil
}

// Check opens, renders and reads the text of a small built-in PDF, so a worker
// advertises rendering only where it works.
func (p *Pool) Check(ctx context.Context) error {
	in, err := p.acquire(ctx, true)
	if err != nil {
		return err
	}
	defer in.release()
	doc, mem, err := in.openMemory(ctx, checkPDF)
	if err != nil {
		return fmt.Errorf("pdfium: check: %w", err)
	}
	defer in.free(mem)
	defer in.closeDocument(doc)
	d := &Document{in: in, handle: doc, pages: 1, pool: p}
	bm, err := d.Render(ctx, 1, RenderOptions{DPI: 18})
	if err != nil {
		return fmt.Errorf("pdfium: check render: %w", err)
	}
	if _, err := vips.Encode(ctx, bm.pixels(), vips.PNG, 0); err != nil {
		return fmt.Errorf("pdfium: check encode: %w", err)
	}
	t, err := d.Text(ctx, 1)
	if err != nil {
		return fmt.Errorf("pdfium: check text: %w", err)
	}
	if t.Text == "" {
		return errors.New("pdfium: check: no text read from the built-in page")
	}
	return nil
}

// acquire takes an instance, waiting for one when wait is set; with wait unset it
// returns errBusy at once when none is free.
func (p *Pool) acquire(ctx context.Context, wait bool) (*instance, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	if wait {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		select {
		case p.slots <- struct{}{}:
		default:
			return nil, errBusy
		}
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		<-p.slots
		return nil, errors.New("pdfium: pool is closed")
	}
	// A slot guarantees a free or creatable instance; the bound only guards a bug.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	pi, err := p.pool.GetInstanceWithContext(gctx)
	if err != nil {
		<-p.slots
		return nil, fmt.Errorf("pdfium: get instance: %w", err)
	}
	mod, err := moduleOf(pi)
	if err != nil {
		_ = pi.Kill()
		<-p.slots
		return nil, err
	}
	in := &instance{pool: p, pi: pi, mod: mod, fns: map[string]api.Function{}}
	if err := in.init(ctx); err != nil {
		in.dead = true
		in.release()
		return nil, err
	}
	return in, nil
}

var errBusy = errors.New("pdfium: every instance is busy")

// moduleOf reaches the wazero module behind a go-pdfium instance. go-pdfium wraps every
// PDFium call in handle maps and per-call allocations that cost more than the call for
// per-character text queries; this package calls the exports directly instead and uses
// go-pdfium for what it does well (the WebAssembly build, its imports, the pool).
func moduleOf(pi gopdfium.Pdfium) (api.Module, error) {
	v := reflect.ValueOf(pi.GetImplementation())
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("Module"); f.IsValid() && f.CanInterface() {
			if m, ok := f.Interface().(api.Module); ok && m != nil {
				return m, nil
			}
		}
	}
	return nil, errors.New("pdfium: the go-pdfium instance exposes no WebAssembly module")
}

// unsupported is the error for a document beyond a configured limit.
// outOfMemory is the failure of a document that needs more than an instance's memory
// (MaxMemoryBytes): an instance serves one document at a time, so its ceiling is the
// job's memory bound in PDFium.
func (p *Pool) outOfMemory() error {
	return domain.ResourceLimit(domain.LimitMemory, p.cfg.MaxMemoryBytes)
}

func unsupported(format string, args ...any) error {
	return &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(format, args...)}
}
