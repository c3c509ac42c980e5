// Package listener serves filemill's HTTP listeners (the API and the built-in storage
// host) with the limits a server facing the internet needs beyond net/http's own:
//
//   - A request body must keep arriving. Each read of it gets a deadline: the next bytes
//     within BodyReadTimeout, and, once BodyReadTimeout has passed since the body began,
//     at least MinBodyRate bytes a second on average since then. The rule is checked per
//     read, never as one deadline for the whole body, so a 5 GiB upload on a slow but
//     steady link runs as long as it needs while a body that trickles a byte now and then
//     is cut. A body cut this way is answered 408 request_timeout (in the API's error
//     shape) when no answer has begun, and its connection is closed. A handler that does
//     not read the body gets the same rule: the body is read through it before the
//     answer, as net/http would read it anyway.
//   - A client address holds at most MaxConnsPerAddress open connections (an IPv6
//     address counts by its /64). The excess is answered 429 rate_limited with
//     Connection: close and never reaches a handler.
//
// It imports domain (ids, codes, client addresses) and domain/logging only; cmd wires a
// listener to each server.
package listener
