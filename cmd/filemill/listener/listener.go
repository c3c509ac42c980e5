package listener

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/filemill/filemill/domain/logging"
)

// Config is a listener's limits.
type Config struct {
	// ReadHeaderTimeout bounds the request line and headers; IdleTimeout a kept-alive
	// connection waiting for its next request.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// BodyReadTimeout is the longest wait for the next bytes of a request body, and the
	// grace from the body's start before MinBodyRate applies. 0: bodies are not bounded.
	BodyReadTimeout time.Duration
	// MinBodyRate is the average a body must keep, in bytes a second since its start,
	// once BodyReadTimeout has passed. 0: only BodyReadTimeout applies.
	MinBodyRate int64
	// MaxConnsPerAddress is how many connections one client address may hold open at
	// once (an IPv6 address counts by its /64). 0: no cap.
	MaxConnsPerAddress int
	// Name says which listener a log line is about ("api", "storage").
	Name string
	// Logger receives refusals, once per LogRepeatInterval with a count.
	Logger            *slog.Logger
	LogRepeatInterval time.Duration
	// Now is the clock body deadlines are computed by; nil is time.Now. The deadlines
	// themselves are the connection's, kept by the runtime in real time.
	Now func() time.Time
}

// DefaultConfig is generous for uploads on slow links: a body may pause for a minute,
// and must average 1 KiB/s after its first minute.
func DefaultConfig() Config {
	return Config{ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		BodyReadTimeout: time.Minute, MinBodyRate: 1024, MaxConnsPerAddress: 128,
		LogRepeatInterval: 10 * time.Second}
}

// Validate names the setting that is out of range.
func (c Config) Validate() error {
	switch {
	case c.ReadHeaderTimeout <= 0:
		return errors.New("ReadHeaderTimeout: must be positive")
	case c.IdleTimeout <= 0:
		return errors.New("IdleTimeout: must be positive")
	case c.BodyReadTimeout < 0:
		return errors.New("BodyReadTimeout: must not be negative")
	case c.MinBodyRate < 0:
		return errors.New("MinBodyRate: must not be negative")
	case c.MinBodyRate > 0 && c.BodyReadTimeout == 0:
		return errors.New("MinBodyRate: needs BodyReadTimeout, the grace before it applies")
	case c.MaxConnsPerAddress < 0:
		return errors.New("MaxConnsPerAddress: must not be negative")
	}
	return nil
}

// Server is an http.Server on a listener with these limits.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen listens on addr and returns the server of h there; call Serve.
func Listen(addr string, h http.Handler, c Config) (*Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return New(ln, h, c), nil
}

// New serves h on ln with the limits of c (valid: see Validate).
func New(ln net.Listener, h http.Handler, c Config) *Server {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.LogRepeatInterval <= 0 {
		c.LogRepeatInterval = DefaultConfig().LogRepeatInterval
	}
	log := logging.NewRepeated(c.Logger, c.LogRepeatInterval)
	if c.MaxConnsPerAddress > 0 {
		ln = limitPerAddress(ln, c.MaxConnsPerAddress, func(addr string) {
			log.Log(context.Background(), slog.LevelWarn, "conns-per-address:"+c.Name,
				"connection refused: too many from one address", "server", c.Name,
				"address", addr, "limit", c.MaxConnsPerAddress)
		})
	}
	if c.BodyReadTimeout > 0 {
		h = guardBodies(h, c, func(r *http.Request, read int64) {
			log.Log(r.Context(), slog.LevelInfo, "slow-body:"+c.Name, "request body too slow: answered 408",
				"server", c.Name, "address", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "bytes_read", read)
		})
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: c.ReadHeaderTimeout, IdleTimeout: c.IdleTimeout,
		ErrorLog: slog.NewLogLogger(c.Logger.Handler(), slog.LevelWarn)}
	return &Server{srv: srv, ln: ln}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve on %s: %w", s.ln.Addr(), err)
	}
	return nil
}

// Shutdown stops accepting, lets requests in flight finish until ctx ends, and closes.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
