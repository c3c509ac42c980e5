package zipparts

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrTooLarge is returned when a container has too many entries, or a part (or the
// parts read so far together) more decompressed bytes than the limits allow.
var ErrTooLarge = errors.New("zipparts: over the limits")

// Limits bound what is read from one container.
type Limits struct {
	MaxEntries    int   // entries in the container
	MaxPartBytes  int64 // decompressed bytes of one part
	MaxTotalBytes int64 // decompressed bytes of all parts read
}

// DefaultLimits are generous for real documents (a 1,000-page report's main part is a
// few tens of megabytes) and small against a bomb's gigabytes.
func DefaultLimits() Limits {
	return Limits{MaxEntries: 10_000, MaxPartBytes: 128 << 20, MaxTotalBytes: 384 << 20}
}

// Container is an open zip container. It is not safe for concurrent use.
type Container struct {
	f     *os.File
	parts map[string]*zip.File
	lim   Limits
	mu    sync.Mutex
	read  int64
}

// Open opens the container at path. Errors: ErrTooLarge (entries), or one wrapping
// zip's error for a damaged container.
func Open(path string, lim Limits) (*Container, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	n, err := EntryCount(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	if n > uint64(lim.MaxEntries) {
		f.Close()
		return nil, fmt.Errorf("%w: %d entries", ErrTooLarge, n)
	}
	zr, err := zip.NewReader(f, st.Size())
	// Entry names are only looked up, never used as paths: "insecure" ones are fine.
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		f.Close()
		return nil, fmt.Errorf("zipparts: %w", err)
	}
	if len(zr.File) > lim.MaxEntries {
		f.Close()
		return nil, fmt.Errorf("%w: %d entries", ErrTooLarge, len(zr.File))
	}
	c := &Container{f: f, parts: make(map[string]*zip.File, len(zr.File)), lim: lim}
	for _, zf := range zr.File {
		if _, dup := c.parts[zf.Name]; !dup { // the first of duplicate names wins, as in Office
			c.parts[zf.Name] = zf
		}
	}
	return c, nil
}

// Close closes the file.
func (c *Container) Close() error { return c.f.Close() }

// Has reports whether the container holds a part of this name.
func (c *Container) Has(name string) bool { return c.parts[name] != nil }

// Names lists the parts, in no order.
func (c *Container) Names() []string {
	out := make([]string, 0, len(c.parts))
	for n := range c.parts {
		out = append(out, n)
	}
	return out
}

// Open returns a part's decompressed bytes as a stream that fails with ErrTooLarge
// past the limits. os.ErrNotExist for a missing part.
func (c *Container) Open(name string) (io.ReadCloser, error) {
	zf := c.parts[name]
	if zf == nil {
		return nil, fmt.Errorf("zipparts: %s: %w", name, os.ErrNotExist)
	}
	if zf.UncompressedSize64 > uint64(c.lim.MaxPartBytes) {
		return nil, fmt.Errorf("%w: part %s declares %d bytes", ErrTooLarge, name, zf.UncompressedSize64)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, fmt.Errorf("zipparts: %s: %w", name, err)
	}
	return &limited{rc: rc, c: c, left: c.lim.MaxPartBytes, name: name}, nil
}

// ReadAll reads a whole part.
func (c *Container) ReadAll(name string) ([]byte, error) {
	rc, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

type limited struct {
	rc   io.ReadCloser
	c    *Container
	left int64
	name string
}

func (l *limited) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	l.c.mu.Lock()
	l.c.read += int64(n)
	total := l.c.read
	l.c.mu.Unlock()
	if l.left < 0 || total > l.c.lim.MaxTotalBytes {
		return n, fmt.Errorf("%w: part %s", ErrTooLarge, l.name)
	}
	return n, err
}

func (l *limited) Close() error { return l.rc.Close() }

// EntryCount reads a zip's entry count from its end-of-central-directory record (or the
// zip64 record it points to), without reading the directory: 0 when there is none.
func EntryCount(r io.ReaderAt, size int64) (uint64, error) {
	const eocdLen, maxComment = 22, 65535
	tailLen := min(size, eocdLen+maxComment)
	tail := make([]byte, tailLen)
	if _, err := r.ReadAt(tail, size-tailLen); err != nil && err != io.EOF {
		return 0, fmt.Errorf("zipparts: read zip directory: %w", err)
	}
	i := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if i < 0 || i+eocdLen > len(tail) {
		return 0, nil
	}
	count := uint64(binary.LittleEndian.Uint16(tail[i+10:]))
	if count != 0xFFFF {
		return count, nil
	}
	// Zip64: a locator just before the record points at the zip64 record.
	loc := size - tailLen + int64(i) - 20
	var l [20]byte
	if loc < 0 {
		return count, nil
	}
	if _, err := r.ReadAt(l[:], loc); err != nil || string(l[:4]) != "PK\x06\x07" {
		return count, nil
	}
	var rec [40]byte
	off := int64(binary.LittleEndian.Uint64(l[8:]))
	if off < 0 || off > size-40 {
		return count, nil
	}
	if _, err := r.ReadAt(rec[:], off); err != nil || string(rec[:4]) != "PK\x06\x06" {
		return count, nil
	}
	return binary.LittleEndian.Uint64(rec[32:]), nil
}
