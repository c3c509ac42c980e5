package storage

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/filemill/filemill/domain"
)

// TempScratch is domain.Scratch on the local disk: each copy is a private file in a
// directory of its own under Dir (the system's temporary directory when empty).
type TempScratch struct {
	Dir string
}

var _ domain.Scratch = TempScratch{}

// Copy writes r to a new file readable only by this process's user.
func (t TempScratch) Copy(ctx context.Context, r io.Reader) (string, func(), error) {
	dir, err := os.MkdirTemp(t.Dir, "filemill-complete-*")
	if err != nil {
		return "", nil, err
	}
	remove := func() { _ = os.RemoveAll(dir) }
	path := filepath.Join(dir, "file")
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		remove()
		return "", nil, err
	}
	_, err = io.CopyBuffer(out, readerWithContext{ctx, r}, make([]byte, 1<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}

// readerWithContext stops a copy once its request is gone.
type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (c readerWithContext) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
