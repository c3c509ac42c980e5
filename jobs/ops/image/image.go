package image

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/filemill/filemill/domain"
)

// Engine family and version prefix.
const EngineName = "image"

// Config bounds what one conversion may cost and sets libvips' process-wide knobs.
// Zero fields take the defaults.
type Config struct {
	// MaxPixels is the most pixels an input may have at its load size, all frames
	// counted (width × height × frames); it also bounds the output and any intermediate
	// size. Larger inputs are refused with unsupported_input from their header, before
	// any pixel is decoded.
	MaxPixels int64
	// MaxOutputDimension is the largest output width or height (WebP stops at 16383).
	MaxOutputDimension int
	// MaxFrames is the most frames an animated conversion keeps.
	MaxFrames int
	// Threads is libvips' worker threads per conversion: the cores of this worker
	// divided by the image engine's concurrency (default: all cores). Process-wide.
	Threads int
	// CacheMaxOperations, CacheMaxMemory and CacheMaxFiles bound libvips' operation
	// cache (process-wide). It is off by default (0): conversions of distinct uploads
	// never repeat an operation, libvips 8.14 keys a cached load by the file's name,
	// not its content, and a load cached from an earlier conversion of the same path
	// made each later one slower (measured). CacheMaxMemory defaults to 16 MiB once
	// operations are cached; files are never held open by it.
	CacheMaxOperations int
	CacheMaxMemory     int64
	CacheMaxFiles      int
	// SVG bounds what rendering an SVG may cost, read from the document before it is
	// drawn.
	SVG SVGLimits
	// Logger receives libvips' own messages, which never reach clients.
	Logger *slog.Logger
}

// DefaultConfig returns the limits used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		MaxPixels:          100_000_000,
		MaxOutputDimension: 16383,
		MaxFrames:          500,
		Threads:            runtime.NumCPU(),
	}
}

// Validate reports the first setting that cannot work, naming it.
func (c Config) Validate() error {
	switch {
	case c.MaxPixels < 0:
		return errors.New("image: MaxPixels must not be negative")
	case c.MaxOutputDimension < 0 || c.MaxOutputDimension > MaxDimension:
		return fmt.Errorf("image: MaxOutputDimension must be between 1 and %d", MaxDimension)
	case c.MaxFrames < 0:
		return errors.New("image: MaxFrames must not be negative")
	case c.Threads < 0 || c.Threads > 1024:
		return errors.New("image: Threads must be between 1 and 1024")
	case c.CacheMaxOperations < 0:
		return errors.New("image: CacheMaxOperations must not be negative")
	case c.CacheMaxMemory < 0:
		return errors.New("image: CacheMaxMemory must not be negative")
	case c.CacheMaxFiles < 0:
		return errors.New("image: CacheMaxFiles must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxPixels <= 0 {
		c.MaxPixels = d.MaxPixels
	}
	if c.MaxOutputDimension <= 0 {
		c.MaxOutputDimension = d.MaxOutputDimension
	}
	if c.MaxFrames <= 0 {
		c.MaxFrames = d.MaxFrames
	}
	if c.Threads <= 0 {
		c.Threads = d.Threads
	}
	if c.CacheMaxOperations > 0 && c.CacheMaxMemory <= 0 {
		c.CacheMaxMemory = 16 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.SVG = c.SVG.withDefaults()
	return c
}

// Engine is the image engine. It is safe for concurrent use.
type Engine struct {
	cfg Config

	checkOnce sync.Mutex
	checked   bool
}

var _ domain.Engine = (*Engine)(nil)

// New starts libvips (once per process) and applies cfg's thread count and cache
// bounds, which are process-wide: the last engine created sets them.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := startVips(); err != nil {
		return nil, err
	}
	configureVips(cfg.Threads, cfg.CacheMaxOperations, cfg.CacheMaxMemory, cfg.CacheMaxFiles)
	return &Engine{cfg: cfg}, nil
}

// Specs declares the operation this engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name:   OperationConvert,
		Engine: EngineName,
		Description: "Converts, resizes, crops and strips images with libvips: JPEG, PNG, WebP, AVIF/HEIF, GIF " +
			"(first frame, or every frame to animated WebP/GIF), TIFF, BMP, SVG and the first page of a PDF in; " +
			"JPEG, PNG, WebP, AVIF, GIF or TIFF out. EXIF orientation is always applied.",
		Options:      Options{},
		InputFormats: []string{"jpg", "png", "webp", "avif", "heic", "heif", "gif", "tiff", "bmp", "svg", "pdf"},
		Price:        domain.Price{Credits: 1, Per: "file"},
		// A conversion takes seconds; one past this is an input built to be costly.
		Timeout: 2 * time.Minute,
	}}
}

// Version names the library doing the work.
func (e *Engine) Version() string { return vipsVersion() }

// Check converts a tiny image to every output format and reads each back: nil when
// libvips and all its encoders work here. A success is remembered.
func (e *Engine) Check(ctx context.Context) error {
	e.checkOnce.Lock()
	defer e.checkOnce.Unlock()
	if e.checked {
		return nil
	}
	if err := startVips(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "filemill-image-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeCheckImage(filepath.Join(dir, "in.png")); err != nil {
		return fmt.Errorf("image: check input: %w", err)
	}
	for _, f := range []string{"jpeg", "png", "webp", "avif", "gif", "tiff"} {
		if err := ctx.Err(); err != nil {
			return err
		}
		work := filepath.Join(dir, f)
		if err := os.Mkdir(work, 0o700); err != nil {
			return err
		}
		opts := Options{Format: f, Width: ptr(8), Effort: ptr(0)}
		if _, err := e.Run(ctx, domain.EngineInput{Operation: OperationConvert, Options: opts,
			Path: filepath.Join(dir, "in.png"), Filename: "check.png", WorkDir: work}); err != nil {
			return fmt.Errorf("image: %s output does not work here: %w", f, err)
		}
	}
	e.checked = true
	return nil
}

// Verify decodes the image at path completely, every frame of an animation, with
// libvips: a verifier for outputs Go's decoders cannot read (AVIF, animated WebP).
// Codes: output_validation_failed.
func (e *Engine) Verify(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer threadDone()
	if !loaderAllowed(path) {
		return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "the output is not an image libvips reads"}
	}
	hdr, err := readHeaderFile(path)
	switch {
	case err != nil:
	case hdr.Pages > 1 && multiFrameLoader(hdr.Loader):
		_, err = verifyFile(path + "[n=-1]")
	case strings.HasPrefix(hdr.Loader, "webpload"):
		var animated bool
		if _, _, animated, err = verifyWebPFile(path); err == nil && animated {
			_, err = verifyFile(path + "[n=-1]")
		}
	default:
		_, err = verifyFile(path)
	}
	if err != nil {
		return e.fail(domain.EngineInput{Filename: filepath.Base(path)}, domain.CodeOutputValidationFailed, "the output does not decode", err)
	}
	return nil
}

// multiFrameLoader reports whether a loader reads every frame or page with n=-1.
func multiFrameLoader(loader string) bool {
	for _, l := range []string{"gifload", "webpload", "heifload", "tiffload"} {
		if strings.HasPrefix(loader, l) {
			return true
		}
	}
	return false
}

// Close releases nothing: libvips stays up for the process.
func (e *Engine) Close() error { return nil }

func ptr[T any](v T) *T { return &v }

// Run converts in.Path per in.Options into one image in in.WorkDir.
//
// Errors: invalid_request (options), unsupported_input (not an image format it reads,
// or over a limit: pixels, frames, output size), encrypted_file (a password-protected
// PDF), corrupted_file (the image cannot be decoded), output_validation_failed (the
// output does not read back as expected), resource_limit_exceeded (libvips' memory grew
// past in.Limits.Memory); ctx's error when it ends first.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Operation != "" && in.Operation != OperationConvert {
		return nil, &domain.Error{Code: domain.CodeUnsupportedOperation, Message: "the image engine does not run " + in.Operation}
	}
	opts, err := domain.EngineOptions[Options](in)
	if err != nil {
		return nil, err
	}

	// libvips keeps buffers per OS thread: run on one and free them at the end.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer threadDone()

	p := newPipeline(in.Limits.Memory)
	defer p.close()
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()

	c := &conversion{ctx: ctx, e: e, p: p, in: in, opts: opts}
	out, err := c.run()
	if err != nil {
		if p.overMemory() {
			return nil, domain.ResourceLimit(domain.LimitMemory, in.Limits.Memory)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("image: %w", ctxErr)
		}
		return nil, err
	}
	return out, nil
}

// fail logs a library's message and returns the client's error.
func (e *Engine) fail(in domain.EngineInput, code, msg string, cause error) error {
	if cause != nil {
		e.cfg.Logger.Warn("image.convert failed", "code", code, "file", in.Filename, "error", cause.Error())
	}
	return &domain.Error{Code: code, Message: msg}
}
