// Package probe looks at files without changing them, for the platform: it counts the
// pages of stored files at completion (so per-page prices are exact) and verifies every
// engine output before it is stored (a PDF parses, an image decodes, JSON is JSON),
// with the engines' own readers where they have one (the pdf engine's).
package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for image.DecodeConfig and image.Decode
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/pdf"
)

// Config bounds what probing may read. Zero fields take the defaults.
type Config struct {
	// MaxPages: a PDF declaring more pages is counted as 0 (unknown), and its jobs
	// reserve an estimate.
	MaxPages int
	// MaxPixels: an image output larger than this is not decoded to verify it, only its
	// header is read.
	MaxPixels int64
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{MaxPages: 100_000, MaxPixels: 100_000_000} }

// Prober counts pages and verifies outputs. It implements domain.PageCounter and
// domain.OutputVerifier.
type Prober struct {
	cfg Config
	// counters count pages of formats beyond PDF, by extension (office documents).
	counters map[string]func(ctx context.Context, path string) (int, error)
	// verifiers verify outputs beyond what Go's decoders read, by MIME type.
	verifiers map[string]func(ctx context.Context, path string) error
}

var (
	_ domain.PageCounter    = (*Prober)(nil)
	_ domain.OutputVerifier = (*Prober)(nil)
)

// New returns a prober.
func New(cfg Config) *Prober {
	d := DefaultConfig()
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = d.MaxPages
	}
	if cfg.MaxPixels <= 0 {
		cfg.MaxPixels = d.MaxPixels
	}
	return &Prober{cfg: cfg, counters: map[string]func(context.Context, string) (int, error){},
		verifiers: map[string]func(context.Context, string) error{}}
}

// CountWith adds a page counter for files of a detected extension (an engine's).
func (p *Prober) CountWith(ext string, count func(ctx context.Context, path string) (int, error)) {
	p.counters[ext] = count
}

// VerifyWith adds a verifier for outputs of a MIME type (an engine's decoder).
func (p *Prober) VerifyWith(mimeType string, verify func(ctx context.Context, path string) error) {
	p.verifiers[mimeType] = verify
}

// Counts reports whether CountPages counts files of format f.
func (p *Prober) Counts(f domain.Format) bool {
	return f.Extension == "pdf" || p.counters[f.Extension] != nil
}

// CountPages returns the pages of the file at path.
func (p *Prober) CountPages(ctx context.Context, path string, f domain.Format) (int, error) {
	if c := p.counters[f.Extension]; c != nil {
		return c(ctx, path)
	}
	if f.Extension != "pdf" {
		return 0, fmt.Errorf("no page counter for %s", f.Extension)
	}
	n, err := pdf.CountPages(ctx, path)
	if err != nil {
		return 0, err
	}
	if n > p.cfg.MaxPages {
		return 0, fmt.Errorf("%d pages is more than %d", n, p.cfg.MaxPages)
	}
	return n, nil
}

// VerifyOutput checks that an engine output parses as its MIME type says. Codes:
// output_validation_failed.
func (p *Prober) VerifyOutput(ctx context.Context, a domain.EngineArtifact) error {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(a.MIMEType, ";", 2)[0]))
	var err error
	switch {
	case a.Verified:
		// Its engine decoded it in full; what stays to check is that its bytes are of
		// the type it is stored as.
		err = sameType(a.Path, mt)
	case p.verifiers[mt] != nil:
		err = p.verifiers[mt](ctx, a.Path)
	case mt == "application/pdf":
		err = pdf.Verify(ctx, a.Path, 0)
	case mt == "application/json":
		err = verifyJSON(a.Path)
	case strings.HasPrefix(mt, "text/"):
		err = verifyText(a.Path)
	case mt == "image/png" || mt == "image/jpeg" || mt == "image/gif" || mt == "image/webp" || mt == "image/tiff" || mt == "image/bmp":
		err = p.verifyImage(a.Path, mt)
	default:
		// A type no decoder here reads: the engine verified it itself.
	}
	if err != nil {
		return fmt.Errorf("%w: %w", &domain.Error{Code: domain.CodeOutputValidationFailed,
			Message: fmt.Sprintf("the output %s did not verify as %s", a.Name, mt)}, err)
	}
	return nil
}

func verifyJSON(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	dec := json.NewDecoder(bufio.NewReader(fh))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func verifyText(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	r := bufio.NewReaderSize(fh, 1<<16)
	for {
		c, size, err := r.ReadRune()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if c == utf8.RuneError && size == 1 {
			return errors.New("not UTF-8")
		}
	}
}

func (p *Prober) verifyImage(path, mt string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	cfg, format, err := image.DecodeConfig(bufio.NewReader(fh))
	if err != nil {
		return err
	}
	if "image/"+format != mt && !(format == "jpeg" && mt == "image/jpeg") {
		return fmt.Errorf("the bytes are %s", format)
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return errors.New("no pixels")
	}
	if int64(cfg.Width)*int64(cfg.Height) > p.cfg.MaxPixels {
		return nil // too large to decode here; the header is sound
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, _, err = image.Decode(bufio.NewReader(fh))
	return err
}

// sameType checks that a file's bytes are of the MIME type it is stored as.
func sameType(path, mt string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(fh, head)
	if got := domain.Detect(head[:n]).MIMEType; got != mt {
		return fmt.Errorf("the bytes are %s", got)
	}
	return nil
}
