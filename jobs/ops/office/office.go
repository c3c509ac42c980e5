package office

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// EngineName is the engine family: its queue and its unit of availability.
const EngineName = "office"

// RenderPageFunc renders one page (1-based) of a PDF at dpi into out, in format
// png, jpeg or webp. The platform plugs the PDF engine's renderer in here.
type RenderPageFunc func(ctx context.Context, pdfPath string, page, dpi int, format, out string) error

// Config sizes the LibreOffice pool and bounds one conversion. Zero fields take the
// defaults.
type Config struct {
	// Instances is how many LibreOffice instances the pool keeps; default the number
	// of cores. Each holds about 150–250 MB.
	Instances int
	// ConversionsPerInstance restarts an instance after this many conversions (leaks);
	// default 200.
	ConversionsPerInstance int
	// Timeout bounds one conversion on an instance; past it the instance is killed with
	// its process group and replaced. Default 2 min. Waiting for a free instance is
	// QueueTimeout, a separate budget.
	Timeout time.Duration
	// QueueTimeout bounds the wait for a free instance (a start included); default 5 min.
	QueueTimeout time.Duration
	// MaxQueue bounds how many conversions may wait for an instance; 0 is unbounded.
	MaxQueue int
	// StartTimeout bounds one instance start; default 60 s.
	StartTimeout time.Duration
	// HealthTimeout bounds one health check; default 5 s.
	HealthTimeout time.Duration
	// HealthAfterIdle checks an instance before use when idle this long; default 30 s.
	HealthAfterIdle time.Duration
	// MemoryLimit caps each instance's address space (helper and LibreOffice); default
	// 4 GiB.
	MemoryLimit int64
	// JobMemoryLimit bounds the memory of the instance serving a job, its own (about
	// 150 MB idle) included, where the host lets each instance have a memory cgroup:
	// a conversion past it fails resource_limit_exceeded. It is held within
	// MemoryLimit; 0 leaves MemoryLimit alone.
	JobMemoryLimit int64
	// ProfileDir holds the instances' profiles and the helper script; default a fresh
	// temporary directory removed at Close.
	ProfileDir string
	// Soffice, Python and PDFToText are the programs used; defaults "soffice",
	// "/usr/bin/python3" (Debian's, which has python3-uno) and "pdftotext".
	Soffice, Python, PDFToText string
	// Sandbox confines each instance with bubblewrap so a document cannot read the
	// worker's files: SandboxAuto (default; unconfined with a warning where bubblewrap
	// cannot run), SandboxOn (required) or SandboxOff. Bwrap is the program, default
	// "bwrap".
	Sandbox, Bwrap string
	// MaxInputBytes refuses larger inputs with unsupported_input; default 256 MiB.
	MaxInputBytes int64
	// MaxPixels refuses images larger than this (width×height) for image → PDF;
	// default 100 MP.
	MaxPixels int64
	// MaxImagePages caps how many pages are rendered for png/jpeg/webp output; default 100.
	MaxImagePages int
	// ImageDPI is the resolution of png/jpeg/webp output; default 150.
	ImageDPI int
	// RenderPage renders a PDF page to an image; nil makes png/jpeg/webp output
	// unsupported. CountPDFPages counts a PDF's pages; nil uses pdfcpu.
	RenderPage    RenderPageFunc
	CountPDFPages func(ctx context.Context, pdfPath string) (int, error)
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		Instances:              runtime.NumCPU(),
		ConversionsPerInstance: 200,
		Timeout:                2 * time.Minute,
		QueueTimeout:           5 * time.Minute,
		StartTimeout:           60 * time.Second,
		HealthTimeout:          5 * time.Second,
		HealthAfterIdle:        30 * time.Second,
		MemoryLimit:            4 << 30,
		Soffice:                "soffice",
		Python:                 "/usr/bin/python3",
		PDFToText:              "pdftotext",
		Sandbox:                SandboxAuto,
		Bwrap:                  "bwrap",
		MaxInputBytes:          256 << 20,
		MaxPixels:              100_000_000,
		MaxImagePages:          100,
		ImageDPI:               150,
	}
}

// Validate names the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Instances < 0:
		return errors.New("office: Instances (pool size) must not be negative")
	case c.ConversionsPerInstance < 0:
		return errors.New("office: ConversionsPerInstance must not be negative")
	case c.Timeout < 0, c.QueueTimeout < 0, c.StartTimeout < 0, c.HealthTimeout < 0:
		return errors.New("office: timeouts must not be negative")
	case c.MaxQueue < 0:
		return errors.New("office: MaxQueue must not be negative")
	case c.MemoryLimit != 0 && c.MemoryLimit < 512<<20:
		return errors.New("office: MemoryLimit below 512 MiB cannot start LibreOffice")
	case c.JobMemoryLimit < 0:
		return errors.New("office: JobMemoryLimit must not be negative")
	case c.MaxInputBytes < 0, c.MaxPixels < 0, c.MaxImagePages < 0:
		return errors.New("office: limits must not be negative")
	case c.ImageDPI != 0 && (c.ImageDPI < 36 || c.ImageDPI > 600):
		return errors.New("office: ImageDPI must be within 36–600")
	}
	if c.Sandbox != "" {
		if err := CheckSandboxMode(c.Sandbox); err != nil {
			return fmt.Errorf("office: Sandbox: %w", err)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	def := func(v *int, dv int) {
		if *v <= 0 {
			*v = dv
		}
	}
	defDur := func(v *time.Duration, dv time.Duration) {
		if *v <= 0 {
			*v = dv
		}
	}
	def(&c.Instances, d.Instances)
	def(&c.ConversionsPerInstance, d.ConversionsPerInstance)
	def(&c.MaxImagePages, d.MaxImagePages)
	def(&c.ImageDPI, d.ImageDPI)
	defDur(&c.Timeout, d.Timeout)
	defDur(&c.QueueTimeout, d.QueueTimeout)
	defDur(&c.StartTimeout, d.StartTimeout)
	defDur(&c.HealthTimeout, d.HealthTimeout)
	if c.HealthAfterIdle == 0 {
		c.HealthAfterIdle = d.HealthAfterIdle
	}
	if c.MemoryLimit <= 0 {
		c.MemoryLimit = d.MemoryLimit
	}
	if c.MaxInputBytes <= 0 {
		c.MaxInputBytes = d.MaxInputBytes
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = d.MaxPixels
	}
	if c.Soffice == "" {
		c.Soffice = d.Soffice
	}
	if c.Python == "" {
		c.Python = d.Python
	}
	if c.PDFToText == "" {
		c.PDFToText = d.PDFToText
	}
	if c.Sandbox == "" {
		c.Sandbox = d.Sandbox
	}
	if c.Bwrap == "" {
		c.Bwrap = d.Bwrap
	}
	return c
}

// Engine is the office engine. It is safe for concurrent use; Close ends its pool.
type Engine struct {
	cfg  Config
	pool *pool

	versionOnce sync.Once
	version     string
}

var _ domain.Engine = (*Engine)(nil)

// New returns an office engine. No LibreOffice starts until the first conversion.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p, err := newPool(cfg)
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, pool: p}, nil
}

// Close kills the pool's instances and removes their profiles when the engine made
// the directory.
func (e *Engine) Close() error {
	e.pool.close()
	return nil
}

// Instances reports the pool's instances (for logs, metrics and tests).
func (e *Engine) Instances() []runner.InstanceState { return e.pool.sup.Instances() }

// Version is LibreOffice's version, e.g. "LibreOffice 7.4.7.2".
func (e *Engine) Version() string {
	e.versionOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// soffice --version starts no office; it prints and exits.
		out, err := runner.Output(ctx, runner.Cmd{Path: e.cfg.Soffice, Args: []string{"--version"}, Env: officeEnv()}, 4096)
		if err == nil {
			f := strings.Fields(string(out))
			if len(f) >= 2 {
				e.version = f[0] + " " + f[1]
			}
		}
	})
	return e.version
}

// Check reports whether LibreOffice, its UNO bridge for Python and pdftotext are here
// and a conversion works: it converts a tiny document through the pool.
func (e *Engine) Check(ctx context.Context) error {
	for _, p := range []string{e.cfg.Soffice, e.cfg.Python, e.cfg.PDFToText} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("office: %s is missing (apt-get install libreoffice-core-nogui libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui python3-uno poppler-utils): %w", p, err)
		}
	}
	if err := runner.Run(ctx, runner.Cmd{Path: e.cfg.Python, Args: []string{"-c", "import uno"}}); err != nil {
		return fmt.Errorf("office: python3-uno is missing (apt-get install python3-uno): %w", err)
	}
	dir, err := os.MkdirTemp("", "filemill-office-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "check.html")
	if err := os.WriteFile(in, []byte("<p>filemill check</p>"), 0o600); err != nil {
		return err
	}
	out := filepath.Join(dir, "check.pdf")
	if _, err := e.pool.convert(ctx, request{Op: "convert", In: in, Out: out, Import: "HTML (StarWriter)", To: "pdf"}); err != nil {
		return fmt.Errorf("office: check conversion: %w", err)
	}
	if _, err := e.countPDF(ctx, out); err != nil {
		return fmt.Errorf("office: check conversion: %w", err)
	}
	return nil
}
