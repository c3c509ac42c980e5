package netguard

import (
	"errors"
	"net/netip"
	"strings"
)

// errNotIPv4 says a host that ends in a number is not an IPv4 address either.
var errNotIPv4 = errors.New("not a valid IPv4 address")

// ParseHostIP reads host as an IP literal. isIP is false for a host name (to be
// resolved). A host whose last label is a number is an IPv4 attempt, as in the WHATWG
// URL standard: no real top-level domain is numeric, and the C resolver would read it
// with inet_aton, so it is read here the same way or refused (err).
func ParseHostIP(host string) (addr netip.Addr, isIP bool, err error) {
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, true, err
		}
		return a, true, nil
	}
	labels := strings.Split(host, ".")
	// One trailing dot is the root label and names the same host.
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	if !isNumberLabel(labels[len(labels)-1]) {
		return netip.Addr{}, false, nil
	}
	a, err := parseIPv4(labels)
	return a, true, err
}

// isNumberLabel reports whether a label is decimal digits, or 0x followed by hex digits.
func isNumberLabel(s string) bool {
	if s == "" {
		return false
	}
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return strings.Trim(s[2:], "0123456789abcdefABCDEF") == ""
	}
	return strings.Trim(s, "0123456789") == ""
}

// parseIPv4 follows inet_aton: one to four parts, each decimal, octal (leading 0) or hex
// (0x); the last part fills all the bytes the earlier parts left (127.1 is 127.0.0.1,
// 2130706433 is 127.0.0.1).
func parseIPv4(parts []string) (netip.Addr, error) {
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, errNotIPv4
	}
	var b [4]byte
	for i, p := range parts {
		v, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, errNotIPv4
		}
		if i < len(parts)-1 {
			if v > 0xff {
				return netip.Addr{}, errNotIPv4
			}
			b[i] = byte(v)
			continue
		}
		rest := 4 - i // bytes the last part fills
		if v >= 1<<(8*rest) {
			return netip.Addr{}, errNotIPv4
		}
		for j := 3; j >= i; j-- {
			b[j] = byte(v)
			v >>= 8
		}
	}
	return netip.AddrFrom4(b), nil
}

func parseIPv4Part(s string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true // inet_aton reads a bare "0x" as 0
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	case s == "":
		return 0, false
	}
	var v uint64
	for _, c := range []byte(s) {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff { // also keeps v from overflowing on long inputs
			return 0, false
		}
	}
	return v, true
}

type block struct {
	prefix netip.Prefix
	reason string
}

func blocks(pairs ...string) []block {
	out := make([]block, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, block{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// IPv4 ranges that are not the public internet (IANA special-purpose registry).
var blockedV4 = blocks(
	"0.0.0.0/8", "reserved (this network)",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "shared (carrier-grade NAT)",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "reserved (IETF protocol assignments)",
	"192.0.2.0/24", "documentation",
	"192.88.99.0/24", "reserved (6to4 relay anycast)",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"240.0.0.0/4", "reserved",
)

// IPv6 ranges that are not the public internet. Anything outside 2000::/3 (global
// unicast) is refused as well, which covers the IPv4-compatible ::/96 and the other
// deprecated or local forms without listing them.
var blockedV6 = blocks(
	"fe80::/10", "link-local",
	"fec0::/10", "private (site-local)",
	"fc00::/7", "private (unique local)",
	"ff00::/8", "multicast",
	"64:ff9b:1::/48", "private (local-use NAT64)",
	"100::/64", "reserved (discard)",
	"2001:db8::/32", "documentation",
	"3fff::/20", "documentation",
	"2001:2::/48", "benchmarking",
	// Teredo (2001::/32), ORCHID and other protocol assignments: no file server lives
	// there, and Teredo hides an IPv4 address we could not vet.
	"2001::/23", "reserved (IETF protocol assignments)",
)

var (
	globalUnicast = netip.MustParsePrefix("2000::/3")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	broadcast     = netip.AddrFrom4([4]byte{255, 255, 255, 255})
)

// embeddedV4 returns the IPv4 address an IPv6 address carries, for the forms that route
// to it: IPv4-mapped (the socket itself speaks IPv4), NAT64 (a translator forwards to
// it) and 6to4 (a relay tunnels to it).
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4In6() {
		return a.Unmap(), true
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// VetAddr returns why a must not be connected to, or "" when it may be. allow lists
// networks the operator opened although private; it is consulted for the address and for
// the IPv4 address it carries.
func VetAddr(a netip.Addr, allow []netip.Prefix) string {
	if !a.IsValid() {
		return "invalid"
	}
	if a.Zone() != "" {
		return "link-local (scoped)"
	}
	if a.Is4In6() {
		// The resolver hands IPv4 answers over in this form, and the socket speaks IPv4.
		a = a.Unmap()
	}
	v4, hasV4 := embeddedV4(a)
	// Never a unicast destination whatever the allow list says: connecting to 0.0.0.0
	// or :: reaches the local host, and multicast and broadcast are not servers.
	for _, x := range []netip.Addr{a, v4} {
		switch {
		case !x.IsValid():
		case x.IsUnspecified():
			return "unspecified"
		case x == broadcast:
			return "broadcast"
		case x.IsMulticast():
			return "multicast"
		}
	}
	for _, p := range allow {
		if p.Contains(a) || (hasV4 && p.Contains(v4)) {
			return ""
		}
	}
	if hasV4 {
		if r := vetV4(v4); r != "" {
			return r + " (IPv4 inside an IPv6 address)" // NAT64 or 6to4 would reach it
		}
		return ""
	}
	if a.Is4() {
		return vetV4(a)
	}
	if a.IsLoopback() {
		return "loopback"
	}
	for _, b := range blockedV6 {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	if !globalUnicast.Contains(a) {
		return "reserved (not global unicast)"
	}
	return ""
}

// Describe turns a reason into a noun phrase: "private (unique local)" becomes
// "private address (unique local)".
func Describe(reason string) string {
	if i := strings.Index(reason, " ("); i >= 0 {
		return reason[:i] + " address" + reason[i:]
	}
	return reason + " address"
}

func vetV4(a netip.Addr) string {
	for _, b := range blockedV4 {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	return ""
}
