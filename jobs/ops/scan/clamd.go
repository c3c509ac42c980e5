package scan

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// clamd speaks clamd's socket protocol: z-prefixed commands ending in NUL, and
// INSTREAM, which sends the bytes as length-prefixed chunks.
type clamd struct {
	network, addr string
	dialTimeout   time.Duration
}

// parseClamdAddress reads "unix:/path", "unix:///path", "/path", "tcp://host:port"
// or "host:port".
func parseClamdAddress(s string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(s, "unix://"):
		network, addr = "unix", strings.TrimPrefix(s, "unix://")
	case strings.HasPrefix(s, "unix:"):
		network, addr = "unix", strings.TrimPrefix(s, "unix:")
	case strings.HasPrefix(s, "/"):
		network, addr = "unix", s
	case strings.HasPrefix(s, "tcp://"):
		network, addr = "tcp", strings.TrimPrefix(s, "tcp://")
	default:
		network, addr = "tcp", s
	}
	if network == "unix" && !strings.HasPrefix(addr, "/") {
		return "", "", fmt.Errorf("%q: a unix socket needs an absolute path", s)
	}
	if network == "tcp" {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", "", fmt.Errorf("%q: want unix:/path/to/clamd.ctl or tcp://host:port", s)
		}
	}
	return network, addr, nil
}

// errClamdUnreachable marks a clamd that cannot be reached or answers nonsense.
var errClamdUnreachable = errors.New("clamd is not reachable")

// errStreamTooLong is clamd refusing a stream over its StreamMaxLength.
var errStreamTooLong = errors.New("clamd refused the stream: longer than its StreamMaxLength")

// limitError is clamd reporting (AlertExceedsMax, as Heuristics.Limits.Exceeded.<Limit>)
// that a file went past one of its limits — MaxFileSize, MaxScanSize, MaxFiles,
// MaxRecursion, MaxScanTime, … —: it was not scanned completely.
type limitError struct {
	limit string // the setting's name, as clamd reports it
}

func (e *limitError) Error() string {
	return "clamd could not scan the file completely: past its " + e.limit + " limit"
}

// limitsPrefix starts clamd's report of a limit exceeded.
const limitsPrefix = "Heuristics.Limits.Exceeded"

// conn dials clamd and ties the connection to ctx: its deadline, and closing it when
// ctx ends.
func (c *clamd) conn(ctx context.Context) (net.Conn, func(), error) {
	d := net.Dialer{Timeout: c.dialTimeout}
	conn, err := d.DialContext(ctx, c.network, c.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errClamdUnreachable, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return conn, func() { stop(); conn.Close() }, nil
}

// command sends one z-command and returns the reply without its NUL.
func (c *clamd) command(ctx context.Context, cmd string) (string, error) {
	conn, done, err := c.conn(ctx)
	if err != nil {
		return "", err
	}
	defer done()
	if _, err := conn.Write([]byte("z" + cmd + "\x00")); err != nil {
		return "", fmt.Errorf("%w: %v", errClamdUnreachable, err)
	}
	reply, err := bufio.NewReader(io.LimitReader(conn, 4096)).ReadString(0)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", errClamdUnreachable, cmd, err)
	}
	return strings.TrimRight(reply, "\x00"), nil
}

func (c *clamd) ping(ctx context.Context) error {
	reply, err := c.command(ctx, "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("%w: PING answered %q", errClamdUnreachable, reply)
	}
	return nil
}

func (c *clamd) version(ctx context.Context) (string, error) {
	return c.command(ctx, "VERSION")
}

// instream sends r to clamd and returns the signatures it found (none: clean).
func (c *clamd) instream(ctx context.Context, r io.Reader) ([]string, error) {
	conn, done, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	w := bufio.NewWriterSize(conn, 256<<10)
	if _, err := w.WriteString("zINSTREAM\x00"); err != nil {
		return nil, err
	}
	buf := make([]byte, 128<<10)
	var writeErr error
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], uint32(n))
			if _, writeErr = w.Write(hdr[:]); writeErr == nil {
				_, writeErr = w.Write(buf[:n])
			}
			if writeErr != nil {
				// clamd closes a stream it refuses (size limit): its reply says why.
				break
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("read input: %w", rerr)
		}
	}
	if writeErr == nil {
		if _, writeErr = w.Write([]byte{0, 0, 0, 0}); writeErr == nil {
			writeErr = w.Flush()
		}
	}
	reply, err := bufio.NewReader(io.LimitReader(conn, 64<<10)).ReadString(0)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if writeErr != nil {
			return nil, fmt.Errorf("%w: sending the stream: %v", errClamdUnreachable, writeErr)
		}
		return nil, fmt.Errorf("%w: INSTREAM: %v", errClamdUnreachable, err)
	}
	return parseScanReply(strings.TrimRight(reply, "\x00"))
}

// fildes passes f's descriptor to clamd over a unix socket (FILDES): clamd reads the
// file itself, with no copy through the socket and no temporary file on its side.
func (c *clamd) fildes(ctx context.Context, f *os.File) ([]string, error) {
	conn, done, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, errors.New("FILDES needs a unix socket")
	}
	if _, err := uc.Write([]byte("zFILDES\x00")); err != nil {
		return nil, fmt.Errorf("%w: %v", errClamdUnreachable, err)
	}
	// The descriptor travels with one ordinary byte.
	if _, _, err := uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(f.Fd())), nil); err != nil {
		return nil, fmt.Errorf("%w: passing the descriptor: %v", errClamdUnreachable, err)
	}
	reply, err := bufio.NewReader(io.LimitReader(conn, 64<<10)).ReadString(0)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("%w: FILDES: %v", errClamdUnreachable, err)
	}
	return parseScanReply(strings.TrimRight(reply, "\x00"))
}

// parseScanReply reads "stream: OK" (INSTREAM), "fd[N]: OK" (FILDES), "…: NAME FOUND"
// (one line per match when clamd reports all matches) or an ERROR.
func parseScanReply(reply string) ([]string, error) {
	var found []string
	for _, line := range strings.Split(reply, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		body := line
		if i := strings.Index(line, ": "); i >= 0 && (strings.HasPrefix(line, "stream") || strings.HasPrefix(line, "fd[")) {
			body = line[i+2:]
		}
		switch {
		case body == "OK":
		case strings.HasPrefix(body, limitsPrefix):
			// clamd with AlertExceedsMax: a file past one of its limits was not
			// scanned completely.
			limit := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(body, limitsPrefix), "."), " FOUND")
			return nil, &limitError{limit: limit}
		case strings.HasSuffix(body, " FOUND"):
			found = append(found, strings.TrimSuffix(body, " FOUND"))
		case strings.Contains(body, "size limit exceeded"):
			return nil, errStreamTooLong
		default:
			return nil, fmt.Errorf("clamd: %s", line)
		}
	}
	return found, nil
}
