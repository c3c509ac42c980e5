package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/filemill/filemill/domain"
)

// idleConn gives every read and write its own deadline, so a server that stops sending
// is cut after the idle timeout, while a caller that is slow to read is not: no read is
// pending, so no deadline runs, between the caller's reads.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// body is a response body that fails past max bytes, reports failures as contract
// errors, and ends the request's context (its total timeout) when closed.
type body struct {
	rc     io.ReadCloser
	max    int64 // negative: no cap
	read   int64
	cancel context.CancelFunc
	ctx    context.Context // the request's: its deadline is the total timeout
	parent context.Context // the caller's
	f      *Fetcher
	once   sync.Once
}

func (b *body) Read(p []byte) (int, error) {
	if b.max >= 0 {
		// Ask for one byte past the cap, so a body of exactly max bytes reads cleanly
		// and a longer one is caught.
		if room := b.max - b.read + 1; int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if b.max >= 0 && b.read > b.max {
		n -= int(b.read - b.max)
		b.read = b.max
		return n, &domain.Error{Code: domain.CodeFileTooLarge, Param: "from_url",
			Message: fmt.Sprintf("from_url sends more than %d bytes, the limit for files", b.max)}
	}
	if err == io.EOF && b.ctx.Err() != nil {
		// The request ended (total timeout, caller gone) before the body did. Once we
		// hang up, the server may still end a chunked body cleanly, and the transport may
		// read that final chunk: a transfer cut short would then read as complete, and a
		// truncated file be stored as whole. A cut is a cut.
		err = b.readError(b.ctx.Err())
	} else if err != nil && err != io.EOF {
		err = b.readError(err)
	}
	return n, err
}

func (b *body) readError(err error) error {
	if b.parent.Err() != nil {
		return fmt.Errorf("read from_url: %w", b.parent.Err())
	}
	if errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
		return timeoutError("the transfer from from_url took longer than the %s allowed", b.f.cfg.TotalTimeout)
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return timeoutError("from_url sent nothing for %s; the transfer was cut", b.f.cfg.IdleTimeout)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return domain.InvalidParam("from_url", "from_url closed the connection before sending the whole body")
	}
	return domain.InvalidParam("from_url", "reading from_url failed: the connection broke off")
}

func (b *body) Close() error {
	var err error
	b.once.Do(func() {
		err = b.rc.Close()
		b.cancel()
	})
	return err
}
