package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/netguard"
)

// Resolver turns a host name into addresses. *net.Resolver is one; tests give their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is the fetcher's settings.
type Config struct {
	// AllowCIDRs are networks fetched from although private (an intranet file server,
	// say). From FILEMILL_OUTBOUND_ALLOW_CIDRS; empty by default. Unspecified, multicast
	// and broadcast addresses stay refused whatever it says.
	AllowCIDRs []netip.Prefix
	// ConnectTimeout bounds name resolution, each TCP connect and the TLS handshake.
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for the response headers once the request is sent.
	HeaderTimeout time.Duration
	// TotalTimeout bounds a whole transfer, body included, until the body is closed.
	TotalTimeout time.Duration
	// IdleTimeout bounds each read from the server: a server that stalls is cut, while a
	// caller that is slow to read is not punished.
	IdleTimeout time.Duration
	// RootCAs verifies servers' certificates. Nil is the system pool, which on Linux and
	// the other Unixes but macOS already honours SSL_CERT_FILE and SSL_CERT_DIR
	// (crypto/x509 root_unix.go, loadSystemRoots), so no extra setting is needed for a
	// private CA bundle.
	RootCAs *x509.CertPool
	// UserAgent is sent with every request.
	UserAgent string
	// Resolver resolves host names; nil is net.DefaultResolver. Whatever it answers is
	// vetted like any DNS answer.
	Resolver Resolver
}

// DefaultConfig returns the defaults: no private network allowed, 10 s to connect, 15 s
// for headers, 30 s between reads, 10 minutes for a whole transfer.
func DefaultConfig() Config {
	return Config{
		ConnectTimeout: 10 * time.Second,
		HeaderTimeout:  15 * time.Second,
		TotalTimeout:   10 * time.Minute,
		IdleTimeout:    30 * time.Second,
		UserAgent:      "filemill (from_url fetcher; +https://github.com/filemill/filemill)",
	}
}

// Validate reports a setting that cannot work, naming it.
func (c Config) Validate() error {
	for name, d := range map[string]time.Duration{
		"ConnectTimeout": c.ConnectTimeout, "HeaderTimeout": c.HeaderTimeout,
		"TotalTimeout": c.TotalTimeout, "IdleTimeout": c.IdleTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("fetch: %s must not be negative", name)
		}
	}
	for _, p := range c.AllowCIDRs {
		if !p.IsValid() {
			return errors.New("fetch: FILEMILL_OUTBOUND_ALLOW_CIDRS holds an invalid network")
		}
	}
	return nil
}

// ParseAllowCIDRs reads FILEMILL_OUTBOUND_ALLOW_CIDRS (see netguard.ParseAllowCIDRs).
func ParseAllowCIDRs(s string) ([]netip.Prefix, error) { return netguard.ParseAllowCIDRs(s) }

// Fetcher fetches public HTTPS URLs. It is safe for concurrent use.
type Fetcher struct {
	cfg Config
}

var _ domain.Fetcher = (*Fetcher)(nil)

// New returns a Fetcher; zero settings take DefaultConfig's values.
func New(cfg Config) *Fetcher {
	def := DefaultConfig()
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&cfg.ConnectTimeout, def.ConnectTimeout}, {&cfg.HeaderTimeout, def.HeaderTimeout},
		{&cfg.TotalTimeout, def.TotalTimeout}, {&cfg.IdleTimeout, def.IdleTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = def.UserAgent
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	allow := make([]netip.Prefix, 0, len(cfg.AllowCIDRs))
	for _, p := range cfg.AllowCIDRs {
		if p.IsValid() {
			allow = append(allow, p.Masked())
		}
	}
	cfg.AllowCIDRs = allow
	return &Fetcher{cfg: cfg}
}

func refuse(format string, args ...any) *domain.Error {
	return domain.InvalidParam("from_url", format, args...)
}

// target is a URL that passed the checks, with the addresses it may be fetched from.
type target struct {
	url   *url.URL
	host  string // as the user wrote it, for messages
	port  uint16
	addrs []netip.Addr
}

// Fetch GETs rawURL and returns its open body, which fails once it passes maxBytes
// (negative: no cap of this package's own). The body keeps the idle and total timeouts
// until it is closed; the caller must close it.
// Codes: invalid_request (param from_url: the URL, its destination, redirects, non-2xx
// answers, network failures), file_too_large, timeout.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, maxBytes int64) (*domain.Fetched, error) {
	t, err := f.check(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	// The request's context outlives Fetch: the body is streamed after we return, and
	// the total timeout must keep running until it is closed.
	rctx, cancel := context.WithTimeout(ctx, f.cfg.TotalTimeout)
	res, err := f.do(rctx, t)
	if err != nil {
		cancel()
		return nil, f.transportError(ctx, rctx, t, err)
	}
	if err := f.checkResponse(res, maxBytes); err != nil {
		res.Body.Close()
		cancel()
		return nil, err
	}
	return &domain.Fetched{
		Body:        &body{rc: res.Body, max: maxBytes, cancel: cancel, ctx: rctx, parent: ctx, f: f},
		Filename:    filename(res, t.url),
		ContentType: res.Header.Get("Content-Type"),
		Size:        res.ContentLength,
	}, nil
}

// check parses and vets rawURL and resolves its host once.
func (f *Fetcher) check(ctx context.Context, rawURL string) (*target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, refuse("from_url is not a valid URL")
	}
	if u.Scheme != "https" {
		return nil, refuse("from_url must be an https URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, refuse("from_url must be an absolute https URL with a host")
	}
	if u.User != nil {
		return nil, refuse("from_url must not carry a user name or password")
	}
	host := u.Hostname()
	if host == "" {
		return nil, refuse("from_url must name a host")
	}
	port := uint16(443)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, refuse("the port of from_url must be 1 to 65535")
		}
		port = uint16(n)
	}
	t := &target{host: host, port: port}
	addr, isIP, err := netguard.ParseHostIP(host)
	switch {
	case err != nil && strings.Contains(host, "%"):
		return nil, refuse("from_url must not carry an IPv6 zone")
	case err != nil:
		return nil, refuse("the host of from_url, %s, is not a valid IP address", host)
	case isIP:
		if addr.Zone() != "" {
			return nil, refuse("from_url must not carry an IPv6 zone")
		}
		if r := netguard.VetAddr(addr, f.cfg.AllowCIDRs); r != "" {
			return nil, refuse("from_url host %s is %s, a %s; private and internal networks are not fetched", host, addr, netguard.Describe(r))
		}
		t.addrs = []netip.Addr{addr}
		// Canonical form, so that the Host header and certificate check name the IP
		// that is actually dialled (0x7f.1 would match no certificate).
		canon := addr.Unmap().String()
		if addr.Unmap().Is6() {
			canon = "[" + canon + "]"
		}
		if u.Port() != "" {
			canon += ":" + u.Port()
		}
		u.Host = canon
	default:
		if !netguard.ValidHostName(host) {
			return nil, refuse("the host of from_url, %q, is not a valid host name (write international names in their xn-- form)", host)
		}
		if t.addrs, err = f.resolve(ctx, host); err != nil {
			return nil, err
		}
	}
	u.Fragment, u.RawFragment = "", ""
	t.url = u
	return t, nil
}

// resolve looks host up once and vets every address: one bad address refuses the whole
// URL, since we could not promise which one a retry or another client would pick.
func (f *Fetcher) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	lctx, cancel := context.WithTimeout(ctx, f.cfg.ConnectTimeout)
	defer cancel()
	addrs, err := f.cfg.Resolver.LookupNetIP(lctx, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("resolve from_url host: %w", ctx.Err())
		}
		var de *net.DNSError
		if errors.As(err, &de) && de.IsTimeout || errors.Is(err, context.DeadlineExceeded) {
			return nil, &domain.Error{Code: domain.CodeTimeout, Param: "from_url",
				Message: fmt.Sprintf("the host of from_url, %s, could not be resolved within %s", host, f.cfg.ConnectTimeout)}
		}
		return nil, refuse("the host of from_url, %s, does not resolve", host)
	}
	if len(addrs) == 0 {
		return nil, refuse("the host of from_url, %s, does not resolve", host)
	}
	for _, a := range addrs {
		if r := netguard.VetAddr(a, f.cfg.AllowCIDRs); r != "" {
			// The address itself is not echoed: it is what our DNS says, not what the
			// user gave.
			return nil, refuse("from_url host %s resolves to a %s; private and internal networks are not fetched", host, netguard.Describe(r))
		}
	}
	return addrs, nil
}

// do sends the GET through a transport bound to this fetch's vetted addresses. A
// transport per fetch means no pooled connection can ever serve another resolution.
func (f *Fetcher) do(ctx context.Context, t *target) (*http.Response, error) {
	dialer := &net.Dialer{
		Timeout:   f.cfg.ConnectTimeout,
		KeepAlive: 30 * time.Second,
		// Belt and braces: whatever reaches the socket is vetted again.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return refuse("from_url could not be connected to")
			}
			if r := netguard.VetAddr(ap.Addr(), f.cfg.AllowCIDRs); r != "" {
				return refuse("from_url host %s resolves to a %s; private and internal networks are not fetched", t.host, netguard.Describe(r))
			}
			return nil
		},
	}
	tr := &http.Transport{
		Proxy: nil, // HTTPS_PROXY and friends must not route us elsewhere
		// The transport's own address is ignored: it would resolve the name again.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var last error
			for _, a := range t.addrs {
				if a.Is4In6() {
					a = a.Unmap()
				}
				c, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, t.port).String())
				if err == nil {
					return &idleConn{Conn: c, idle: f.cfg.IdleTimeout}, nil
				}
				last = err
				if ctx.Err() != nil {
					break
				}
			}
			return nil, last
		},
		TLSClientConfig:        &tls.Config{RootCAs: f.cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    f.cfg.ConnectTimeout,
		ResponseHeaderTimeout:  f.cfg.HeaderTimeout,
		DisableKeepAlives:      true,
		DisableCompression:     true, // the bytes as served; no gzip bomb expanded for us
		MaxResponseHeaderBytes: 64 << 10,
	}
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // answered below with the status and Location
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url.String(), nil)
	if err != nil {
		return nil, refuse("from_url is not a valid URL")
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "*/*")
	return client.Do(req)
}

func (f *Fetcher) checkResponse(res *http.Response, maxBytes int64) error {
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400 && res.Header.Get("Location") != "":
		return refuse("from_url answered %s with a redirect to %s; redirects are not followed",
			res.Status, clip(res.Header.Get("Location"), 512))
	case res.StatusCode < 200 || res.StatusCode > 299:
		return refuse("from_url answered %s; only 2xx answers are fetched", clip(res.Status, 128))
	case maxBytes >= 0 && res.ContentLength > maxBytes:
		return &domain.Error{Code: domain.CodeFileTooLarge, Param: "from_url",
			Message: fmt.Sprintf("from_url announces %d bytes; files are limited to %d bytes", res.ContentLength, maxBytes)}
	}
	return nil
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// transportError turns a failed request into a code and a message that names no address
// the user did not give. parent is the caller's context, rctx the request's.
func (f *Fetcher) transportError(parent, rctx context.Context, t *target, err error) error {
	if de := domain.AsError(err); de != nil {
		return de // refused by the dialler's Control hook
	}
	if parent.Err() != nil {
		return fmt.Errorf("fetch from_url: %w", parent.Err())
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return timeoutError("from_url did not answer within the %s a transfer may take", f.cfg.TotalTimeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return timeoutError("could not connect to from_url host %s within %s", t.host, f.cfg.ConnectTimeout)
		}
		return timeoutError("from_url host %s did not answer in time", t.host)
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &hostErr):
		return refuse("the TLS certificate of from_url host %s is not valid for it", t.host)
	case errors.As(err, &unknownCA):
		return refuse("the TLS certificate of from_url host %s is not signed by a trusted authority", t.host)
	case errors.As(err, &invalid):
		return refuse("the TLS certificate of from_url host %s is invalid (%s)", t.host, certReason(invalid.Reason))
	case errors.As(err, &record):
		return refuse("from_url host %s does not speak TLS on that port", t.host)
	case errors.Is(err, syscall.ECONNREFUSED):
		return refuse("from_url host %s refused the connection", t.host)
	case errors.Is(err, syscall.ECONNRESET):
		return refuse("from_url host %s reset the connection", t.host)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return refuse("from_url host %s is unreachable", t.host)
	}
	return refuse("fetching from_url from host %s failed", t.host)
}

func certReason(r x509.InvalidReason) string {
	switch r {
	case x509.Expired:
		return "expired or not yet valid"
	case x509.NotAuthorizedToSign, x509.CANotAuthorizedForThisName, x509.CANotAuthorizedForExtKeyUsage:
		return "its issuer may not sign it"
	case x509.IncompatibleUsage:
		return "not meant for server authentication"
	}
	return "rejected"
}

func timeoutError(format string, args ...any) *domain.Error {
	return &domain.Error{Code: domain.CodeTimeout, Param: "from_url", Message: fmt.Sprintf(format, args...)}
}

// filename is the name the server gives (Content-Disposition), else the last segment of
// the URL's path, else "download"; a base name only, never a path.
func filename(res *http.Response, u *url.URL) string {
	if cd := res.Header.Get("Content-Disposition"); cd != "" {
		if _, params, err := mime.ParseMediaType(cd); err == nil {
			if n := baseName(params["filename"]); n != "" {
				return n
			}
		}
	}
	p := u.EscapedPath()
	seg := p[strings.LastIndexByte(p, '/')+1:]
	if s, err := url.PathUnescape(seg); err == nil {
		seg = s
	}
	if n := baseName(seg); n != "" {
		return n
	}
	return "download"
}

// baseName keeps what follows the last slash or backslash, without control characters;
// "." and ".." are no names.
func baseName(s string) string {
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s))
	if s == "." || s == ".." || len(s) > 1024 {
		return ""
	}
	return s
}
