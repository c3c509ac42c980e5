package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resolver turns a host name into addresses. *net.Resolver is one; tests give their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard vets outbound URLs and connections. The zero value refuses every non-public
// address and resolves with net.DefaultResolver.
type Guard struct {
	// Allow lists networks that may be reached although private.
	Allow []netip.Prefix
	// Resolver resolves host names; nil is net.DefaultResolver.
	Resolver Resolver
	// LookupTimeout bounds one resolution (default 5 s).
	LookupTimeout time.Duration
}

// RefusedError says why a URL or an address may not be reached. Its message names no
// address the caller did not give: a name's resolved addresses stay in the server.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// ErrLookupTimeout reports that a name could not be resolved in time.
var ErrLookupTimeout = errors.New("netguard: name resolution timed out")

// Target is a URL that passed the checks.
type Target struct {
	URL   *url.URL
	Host  string // as written in the URL
	Port  uint16
	Addrs []netip.Addr // the vetted addresses it resolved to
}

// ParseURL checks the shape of an https URL (scheme, host, port, no credentials) and,
// for a host written as an IP address, the address; it does not resolve names.
func (g *Guard) ParseURL(raw string) (*Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refused("is not a valid URL")
	}
	if u.Scheme != "https" {
		return nil, refused("must be an https URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, refused("must be an absolute https URL with a host")
	}
	if u.User != nil {
		return nil, refused("must not carry a user name or password")
	}
	host := u.Hostname()
	if host == "" {
		return nil, refused("must name a host")
	}
	port := uint16(443)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, refused("must have a port from 1 to 65535")
		}
		port = uint16(n)
	}
	t := &Target{URL: u, Host: host, Port: port}
	addr, isIP, err := ParseHostIP(host)
	switch {
	case err != nil && strings.Contains(host, "%"):
		return nil, refused("must not carry an IPv6 zone")
	case err != nil:
		return nil, refused("has a host, %s, that is not a valid IP address", host)
	case isIP:
		if addr.Zone() != "" {
			return nil, refused("must not carry an IPv6 zone")
		}
		if r := VetAddr(addr, g.Allow); r != "" {
			return nil, refused("points at %s, a %s; private and internal networks are not reached", host, Describe(r))
		}
		t.Addrs = []netip.Addr{addr}
	default:
		if !ValidHostName(host) {
			return nil, refused("has a host, %q, that is not a valid host name (write international names in their xn-- form)", host)
		}
	}
	return t, nil
}

// Check parses raw as ParseURL does, resolves its host once and vets every address: one
// bad address refuses the whole URL, since nothing says which one a connection would
// pick. ErrLookupTimeout when the name could not be resolved in time.
func (g *Guard) Check(ctx context.Context, raw string) (*Target, error) {
	t, err := g.ParseURL(raw)
	if err != nil || len(t.Addrs) > 0 {
		return t, err
	}
	timeout := g.LookupTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res Resolver = net.DefaultResolver
	if g.Resolver != nil {
		res = g.Resolver
	}
	addrs, err := res.LookupNetIP(lctx, "ip", t.Host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var de *net.DNSError
		if errors.As(err, &de) && de.IsTimeout || errors.Is(err, context.DeadlineExceeded) {
			return nil, ErrLookupTimeout
		}
		return nil, refused("has a host, %s, that does not resolve", t.Host)
	}
	if len(addrs) == 0 {
		return nil, refused("has a host, %s, that does not resolve", t.Host)
	}
	for _, a := range addrs {
		if r := VetAddr(a, g.Allow); r != "" {
			return nil, refused("has a host, %s, that resolves to a %s; private and internal networks are not reached", t.Host, Describe(r))
		}
	}
	t.Addrs = addrs
	return t, nil
}

// Control is a net.Dialer Control hook that refuses to connect to an address VetAddr
// refuses: whatever a resolver answered, the socket itself is vetted.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused("could not be connected to")
	}
	if r := VetAddr(ap.Addr(), g.Allow); r != "" {
		return refused("resolves to a %s; private and internal networks are not reached", Describe(r))
	}
	return nil
}

// ValidHostName reports whether h is an ASCII host name (letters, digits, '-', '_'
// and dots, no empty label).
func ValidHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, c := range []byte(h) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return !strings.HasPrefix(h, ".") && !strings.Contains(h, "..")
}

// ParseAllowCIDRs reads FILEMILL_OUTBOUND_ALLOW_CIDRS: networks separated by commas or
// spaces; a bare address stands for itself alone.
func ParseAllowCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("FILEMILL_OUTBOUND_ALLOW_CIDRS: %q is not an address or CIDR network", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("FILEMILL_OUTBOUND_ALLOW_CIDRS: %q is not a CIDR network", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
