package listener

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/filemill/filemill/domain"
)

// Refusals of connections over the cap are answered, not just closed, so a client
// learns why. Each answer lingers briefly (the client's request is read and dropped, so
// closing does not reset the connection before the answer is read); a flood of them
// beyond maxLingering at once is closed without an answer.
const (
	maxLingering  = 64
	lingerTimeout = time.Second
	lingerRead    = 64 << 10
)

// limitedListener refuses a connection whose client address already holds max.
type limitedListener struct {
	net.Listener
	max     int
	refused func(addr string)

	mu   sync.Mutex
	open map[netip.Prefix]int

	lingering chan struct{}
}

func limitPerAddress(ln net.Listener, max int, refused func(addr string)) net.Listener {
	return &limitedListener{Listener: ln, max: max, refused: refused, open: map[netip.Prefix]int{},
		lingering: make(chan struct{}, maxLingering)}
}

// addressKey is what the cap counts by: the address, an IPv6 one by its /64 (one
// subscriber's network, all of whose addresses one client can use).
func addressKey(a net.Addr) netip.Prefix {
	ip := domain.ClientAddr(a.String())
	bits := ip.BitLen()
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := addressKey(c.RemoteAddr())
		l.mu.Lock()
		if l.open[key] >= l.max {
			l.mu.Unlock()
			l.refuse(c)
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: sync.OnceFunc(func() { l.release(key) })}, nil
	}
}

func (l *limitedListener) release(key netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// refuse answers 429 rate_limited on c and closes it.
func (l *limitedListener) refuse(c net.Conn) {
	if l.refused != nil {
		l.refused(c.RemoteAddr().String())
	}
	select {
	case l.lingering <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.lingering }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(lingerTimeout))
		if _, err := c.Write(refusal(l.max)); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, lingerRead))
	}()
}

// refusal is the answer to a connection over the cap, in the API's error shape.
func refusal(max int) []byte {
	id := domain.NewID(domain.PrefixRequest)
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": domain.CodeRateLimited,
		"message":    fmt.Sprintf("too many connections from your address: at most %d at once; close some or retry shortly", max),
		"request_id": id}})
	return fmt.Appendf(nil, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Retry-After: 1\r\nCache-Control: no-store\r\nX-Request-Id: %s\r\nConnection: close\r\n\r\n%s\n", len(body)+1, id, body)
}

// countedConn gives its place back when it closes, however often Close is called.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close before closing, as it does on a TCP connection,
// so a client reads the last answer before the connection goes.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps sendfile for downloads: net/http copies a file to the connection
// through it.
func (c *countedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
