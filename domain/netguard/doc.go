// Package netguard decides where the platform may send a request of its own: the
// from_url fetcher (storage/fetch) and webhook delivery (jobs) both go through it, so
// neither can be turned into a way into the platform's own networks (SSRF).
//
// It judges addresses (loopback, private, link-local and cloud metadata, reserved,
// multicast, IPv6 forms that carry an IPv4 address), reads hosts the way the C resolver
// would, resolves names and vets every answer, and gives a dialler Control hook that
// vets the address a socket actually connects to, so a DNS answer that changes between
// check and use reaches nothing it should not. An operator can open chosen private
// networks (FILEMILL_OUTBOUND_ALLOW_CIDRS).
//
// It imports the standard library only, so domain and every outer package may use it.
package netguard
