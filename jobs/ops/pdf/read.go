package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/filemill/filemill/domain"
)

// config is pdfcpu's configuration for cmd: its command-line defaults, built here
// because model.NewDefaultConfiguration installs a config directory under the home
// directory on first use, and a worker writes nowhere but its work directory.
func (e *Engine) config(cmd model.CommandMode, size int64) *model.Configuration {
	return &model.Configuration{
		Version:                   model.VersionStr,
		Reader15:                  true,
		ValidationMode:            model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip,
		Eol:                       types.EolLF,
		WriteObjectStream:         true,
		WriteXRefStream:           true,
		Optimize:                  true,
		OptimizeBeforeWriting:     true,
		OptimizeResourceDicts:     true,
		Offline:                   true,
		Timeout:                   5,
		Cmd:                       cmd,
		Limits:                    limitsFor(size, e.cfg.MaxStreamBytes),
	}
}

// limitsFor are pdfcpu's resource limits for a file of size bytes, its streams at most
// maxStream bytes encoded or decoded. Every object takes a few bytes of the file, even
// compressed in an object stream, and a cross-reference entry without an object (a
// free one) serves nothing: a file of n bytes has far fewer than n/4 objects. Without
// that bound a cross-reference stream of 60 KB declaring nine million free entries
// costs pdfcpu minutes of CPU and gigabytes, and goes on after the deadline.
func limitsFor(size, maxStream int64) model.ResourceLimits {
	l := model.DefaultResourceLimits()
	l.MaxStreamBytes, l.MaxDecodeBytes = maxStream, maxStream
	n := int(min(max(size/4, 10_000), int64(l.MaxObjectCount)))
	l.MaxObjectCount, l.MaxXRefEntries = n, min(n, l.MaxXRefEntries)
	return l
}

// read parses, validates and optimises the PDF at path for cmd. The work runs under
// pdfcpu's resource limits; ctx ends the wait, and the parse notices it at its
// checkpoints.
func (e *Engine) read(ctx context.Context, path string, cmd model.CommandMode) (*model.Context, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pdf: open input: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("pdf: stat input: %w", err)
	}
	if st.Size() > e.cfg.MaxInputBytes {
		return nil, unsupported("the PDF is %d bytes; at most %d are processed", st.Size(), e.cfg.MaxInputBytes)
	}
	var pc *model.Context
	err = guard(ctx, func() error {
		var err error
		pc, err = api.ReadValidateAndOptimize(ctxReader{ctx, f}, e.config(cmd, st.Size()))
		return err
	})
	if err != nil {
		return nil, e.classify(ctx, err)
	}
	if err := e.checkPages(pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// checkPages refuses documents beyond MaxPages, or whose page tree does not hold the
// pages it counts (a loop, or a lying /Count).
func (e *Engine) checkPages(pc *model.Context) error {
	if pc.PageCount > e.cfg.MaxPages {
		return unsupported("the PDF has %d pages; at most %d are processed", pc.PageCount, e.cfg.MaxPages)
	}
	if pc.PageCount < 1 {
		return &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF has no pages"}
	}
	n, err := walkPages(pc.XRefTable, e.cfg.MaxPages, 0)
	if err != nil {
		return err
	}
	if n != pc.PageCount {
		return &domain.Error{Code: domain.CodeCorruptedFile,
			Message: fmt.Sprintf("the PDF's page tree counts %d pages but holds %d", pc.PageCount, n)}
	}
	return nil
}

// ctxReader makes reads fail once ctx is done, so a long parse stops at its next read.
type ctxReader struct {
	ctx context.Context
	f   *os.File
}

func (r ctxReader) Read(b []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.f.Read(b)
}

func (r ctxReader) Seek(off int64, whence int) (int64, error) { return r.f.Seek(off, whence) }

var _ io.ReadSeeker = ctxReader{}

// guard runs fn, turning a panic (pdfcpu signals some malformed input that way) into
// an error and returning ctx's error as soon as ctx ends; fn then finishes on its own,
// bounded by the limits.
func guard(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("pdf library failure: %v", p)
			}
		}()
		done <- fn()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// classify turns a pdfcpu error into the contract's code. pdfcpu's message is logged,
// never shown.
func (e *Engine) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	e.log.Debug("pdf: library error", slog.String("error", err.Error()))
	switch {
	case errors.Is(err, pdfcpu.ErrWrongPassword), errors.Is(err, pdfcpu.ErrOwnerPasswordRequired), errors.Is(err, pdfcpu.ErrEncrypted):
		return &domain.Error{Code: domain.CodeEncryptedFile, Message: "the PDF is password-protected"}
	case errors.Is(err, pdfcpu.ErrPermissionDenied):
		return &domain.Error{Code: domain.CodeEncryptedFile, Message: "the PDF's permissions forbid changing it"}
	case strings.Contains(err.Error(), "limit"):
		// pdfcpu's resource limits (stream and object sizes) have no sentinel errors.
		return &domain.Error{Code: domain.CodeUnsupportedInput, Message: "the PDF holds a stream or object larger than this service processes"}
	}
	return &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF cannot be read: it is damaged or not a PDF"}
}

// write writes pc to path.
func (e *Engine) write(ctx context.Context, pc *model.Context, path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("pdf: create output: %w", err)
	}
	err = guard(ctx, func() error { return api.WriteContext(pc, f) })
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("pdf: write output: %w", cerr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.log.Debug("pdf: write failed", slog.String("error", err.Error()))
		return &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF cannot be rewritten: parts of it are damaged"}
	}
	return nil
}

func unsupported(format string, args ...any) error {
	return &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(format, args...)}
}
