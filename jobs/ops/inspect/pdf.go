package inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pdfConfig is pdfcpu's configuration for reading. It is built here rather than by
// model.NewDefaultConfiguration, which installs a config directory (and fonts) under
// the user's home on first use: a worker must not write outside its work directory.
func pdfConfig() *model.Configuration {
	return &model.Configuration{
		Version:  model.VersionStr,
		Reader15: true,
		// Relaxed: repairable spec violations (wrong trailer size, stray objects) are
		// common in real files and do not stop a viewer, so they must not stop inspect.
		ValidationMode:            model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip,
		Eol:                       types.EolLF,
		// LISTINFO needs no permission bits, so an owner-password-only file opens.
		Cmd:     model.LISTINFO,
		Offline: true,
		Limits:  model.DefaultResourceLimits(),
	}
}

func (e *Engine) inspectPDF(ctx context.Context, src source) (*PDFReport, error) {
	if _, err := src.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	pc, readErr := pdfcpu.ReadWithContext(ctx, src.f, pdfConfig())
	if readErr != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return e.inspectLockedPDF(ctx, src, readErr)
	}

	rep := &PDFReport{Version: pdfVersion(pc.XRefTable), Encrypted: pc.Encrypt != nil}
	n, err := pageCount(pc.XRefTable)
	if err != nil {
		return nil, corrupted("PDF", err)
	}
	rep.PageCount = &n
	rep.ExceedsPageLimit = n > e.cfg.MaxPages
	// A page tree that counts pages it cannot deliver is what a truncated file whose
	// cross-reference table pdfcpu rebuilt looks like.
	if rep.PageSize, err = firstPageSize(pc.XRefTable); err != nil {
		return nil, corrupted("PDF", err)
	}
	rep.Title = infoText(pc.XRefTable, "Title")
	rep.Author = infoText(pc.XRefTable, "Author")
	rep.Producer = infoText(pc.XRefTable, "Producer")

	text, complete, err := hasTextLayer(ctx, pc.XRefTable, e.cfg.MaxPages)
	if err != nil {
		return nil, err
	}
	if text || complete {
		rep.TextLayer = &text
	}
	return rep, nil
}

// inspectLockedPDF handles a PDF pdfcpu could not open. When the file is encrypted and
// wants a user password, what is not encrypted can still be read: a PDF encrypts only
// strings and streams, so the page tree's numbers are in the clear unless it sits in
// an (encrypted) object stream. Anything else is a corrupted file.
func (e *Engine) inspectLockedPDF(ctx context.Context, src source, readErr error) (*PDFReport, error) {
	patches, err := findEncryptKeys(ctx, src)
	if err != nil {
		return nil, err
	}
	if len(patches) == 0 {
		return nil, corrupted("PDF", readErr)
	}
	rep := &PDFReport{Encrypted: true, RequiresPassword: true, Version: headerVersion(src.f)}
	pr := &patchedReader{f: src.f, size: src.size, at: patches}
	pc, err := pdfcpu.ReadWithContext(ctx, pr, pdfConfig())
	if err != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Encrypted and unreadable without the password: report what is known.
		return rep, nil
	}
	if v := pdfVersion(pc.XRefTable); v != "" {
		rep.Version = v
	}
	if n, err := pageCount(pc.XRefTable); err == nil {
		rep.PageCount = &n
		rep.ExceedsPageLimit = n > e.cfg.MaxPages
		rep.PageSize, _ = firstPageSize(pc.XRefTable)
	}
	return rep, nil
}

func pdfVersion(x *model.XRefTable) string {
	switch {
	case x.RootVersion != nil:
		return x.RootVersion.String()
	case x.HeaderVersion != nil:
		return x.HeaderVersion.String()
	}
	return ""
}

var headerVersionRE = regexp.MustCompile(`%PDF-(\d\.\d)`)

// headerVersion reads the version from the header, which may follow some junk bytes.
func headerVersion(f *os.File) string {
	buf := make([]byte, 1024)
	n, _ := f.ReadAt(buf, 0)
	if m := headerVersionRE.FindSubmatch(buf[:n]); m != nil {
		return string(m[1])
	}
	return ""
}

// pageCount is the page tree root's Count, as viewers report it.
func pageCount(x *model.XRefTable) (int, error) {
	x.PageCount = 0
	if err := x.EnsurePageCount(); err != nil {
		return 0, fmt.Errorf("page tree: %w", err)
	}
	if x.PageCount < 0 {
		return 0, fmt.Errorf("page tree: negative page count %d", x.PageCount)
	}
	return x.PageCount, nil
}

// firstPageSize is page 1's MediaBox in points, turned by its Rotate; nil when the
// document has no pages or page 1 has no box. It fails when page 1 cannot be found.
func firstPageSize(x *model.XRefTable) (*PageSize, error) {
	if x.PageCount < 1 {
		return nil, nil
	}
	_, _, attrs, err := x.PageDict(1, false)
	if err != nil {
		return nil, fmt.Errorf("page 1: %w", err)
	}
	if attrs == nil || attrs.MediaBox == nil {
		return nil, nil
	}
	w, h := math.Abs(attrs.MediaBox.Width()), math.Abs(attrs.MediaBox.Height())
	if ((attrs.Rotate%360+360)%360)%180 != 0 {
		w, h = h, w
	}
	return &PageSize{Width: round3(w), Height: round3(h)}, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// infoText returns one entry of the document information dictionary, "" when absent
// or unreadable (metadata is a nicety, never a reason to fail).
func infoText(x *model.XRefTable, key string) string {
	if x.Info == nil {
		return ""
	}
	d, err := x.DereferenceDict(*x.Info)
	if err != nil || d == nil {
		return ""
	}
	o, ok := d.Find(key)
	if !ok || o == nil {
		return ""
	}
	s, err := x.DereferenceText(o)
	if err != nil {
		return ""
	}
	return s
}

// findEncryptKeys returns the offsets of "/Encrypt" keys (the trailer's link to the
// encryption dictionary), reading the file once in chunks.
func findEncryptKeys(ctx context.Context, src source) ([]int64, error) {
	const key = "/Encrypt"
	const maxHits = 256
	var hits []int64
	buf := make([]byte, 1<<20)
	var base int64 // file offset of buf[0]
	carry := 0     // bytes kept from the previous chunk: a key may straddle chunks
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := src.f.ReadAt(buf[carry:], base+int64(carry))
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("inspect: read PDF: %w", err)
		}
		chunk, atEOF := buf[:carry+n], err == io.EOF
		for i := 0; ; i++ {
			j := bytes.Index(chunk[i:], []byte(key))
			if j < 0 {
				break
			}
			i += j
			end := i + len(key)
			// The byte after the key must end the name ("/EncryptMetadata" is another
			// key); a key at the very end of a chunk is decided with the next one.
			if end < len(chunk) && !isRegular(chunk[end]) || end == len(chunk) && atEOF {
				hits = append(hits, base+int64(i))
				if len(hits) == maxHits {
					return hits, nil
				}
			}
		}
		if atEOF || n == 0 {
			break
		}
		// The last len(key) bytes hold any key not yet decided, and no decided one.
		carry = min(len(key), len(chunk))
		copy(buf, chunk[len(chunk)-carry:])
		base += int64(len(chunk) - carry)
	}
	return hits, nil
}

// patchedReader reads the file with every "/Encrypt" key renamed to a key of the same
// length, so pdfcpu opens the file as unencrypted with all offsets intact.
type patchedReader struct {
	f    *os.File
	pos  int64
	size int64
	at   []int64
}

const encryptRename = "/NoCrypt" // len("/Encrypt")

func (p *patchedReader) Read(b []byte) (int, error) {
	if p.pos >= p.size {
		return 0, io.EOF
	}
	n, err := p.f.ReadAt(b, p.pos)
	if err == io.EOF && n > 0 {
		err = nil
	}
	for _, at := range p.at {
		for k := range len(encryptRename) {
			if i := at + int64(k) - p.pos; i >= 0 && i < int64(n) {
				b[i] = encryptRename[k]
			}
		}
	}
	p.pos += int64(n)
	return n, err
}

func (p *patchedReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += p.pos
	case io.SeekEnd:
		offset += p.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative position %d", offset)
	}
	p.pos = offset
	return offset, nil
}
