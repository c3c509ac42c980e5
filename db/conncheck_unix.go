//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package db

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// errUnexpectedRead: the server sent something to a connection idle in the pool. An
// idle PostgreSQL session is sent nothing unasked but its own end (a FATAL such as
// "terminating connection due to administrator command"), so the session is over.
var errUnexpectedRead = errors.New("unexpected read from an idle connection")

// connCheck looks, without waiting, whether the server ended an idle connection: the
// socket is readable (an error message, the end of the stream) or failed. A live idle
// connection has nothing to read.
func connCheck(c net.Conn) error {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS: look at the socket beneath
		c = u.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	// The driver leaves the deadline of the connection's last read in place; past it,
	// the look below would fail without looking. The driver sets a new one before its
	// next read.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var checkErr error
	err = raw.Read(func(fd uintptr) bool {
		var buf [1]byte
		// The runtime keeps the socket non-blocking: no data is EAGAIN at once.
		n, err := syscall.Read(int(fd), buf[:])
		switch {
		case n == 0 && err == nil:
			checkErr = io.EOF
		case n > 0:
			checkErr = errUnexpectedRead
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK):
			checkErr = nil
		default:
			checkErr = err
		}
		return true // one look, never wait for the socket to become readable
	})
	if err != nil {
		return err
	}
	return checkErr
}
