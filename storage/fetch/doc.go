// Package fetch owns filemill's outbound HTTPS fetcher: the domain.Fetcher behind
// POST /v1/uploads with from_url. Its one job is to fetch what the user named without
// ever becoming a way into the platform's own networks (SSRF).
//
// It imports domain and the standard library only; it must never import rest, graph,
// db, jobs or storage. The address rules live in domain/netguard, shared with webhook
// delivery. cmd reads FILEMILL_OUTBOUND_ALLOW_CIDRS (ParseAllowCIDRs) and the
// timeouts into a Config and wires New(cfg) into domain.Uploads.
//
// # How a fetch is made safe
//
//   - Only https URLs with a host and no user name or password. Hosts written as IPv4
//     numbers are read the way inet_aton reads them (decimal 2130706433, octal
//     0177.0.0.1, hex 0x7f.0.0.1, short 127.1), because that is how the C resolver would
//     read them; a host whose last label is a number but that is no valid IPv4 address
//     is refused, as browsers do. IPv6 zone ids are refused. Literals are rewritten to
//     their canonical form, so the TLS certificate is checked against the IP meant.
//   - Names are resolved once, and every resolved address must pass vetting: loopback,
//     private, link-local (cloud metadata), unspecified, multicast, broadcast, shared
//     (CGNAT), reserved, benchmarking and documentation ranges are refused, and IPv6
//     forms that carry an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4) are judged
//     by the IPv4 address inside. Config.AllowCIDRs lets an operator open chosen private
//     networks.
//   - The transport dials only the vetted addresses (its dialler ignores the host name it
//     is handed, and a socket-level Control hook re-vets the address actually connected
//     to), so a DNS answer that changes between check and use (rebinding) cannot reach
//     anything else. Proxies from the environment are ignored; TLS is verified for the
//     name in the URL.
//   - Redirects are not followed; non-2xx answers are refused; a Content-Length above
//     the cap is refused before any byte is read, and the body fails once it passes the
//     cap. Connect, header, idle (between reads) and total timeouts bound every fetch,
//     and stay in force while the caller streams the body.
//
// Refusals are *domain.Error with code invalid_request and param from_url, except
// file_too_large (too big) and timeout (too slow). Messages never echo an address the
// user did not give: a name's resolved addresses stay in the server.
package fetch
