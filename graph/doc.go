// Package graph is the GraphQL front door: the *.graphqls schema, the code gqlgen
// generates from it (see gqlgen.yml at the module root; `make lint` checks it is
// current), resolvers that call the domain services, and the HTTP handler serving
// /graphql (its playground page is the console's, package web).
//
// Resolvers are thin: they decode arguments, call the same domain method the REST
// handler calls, and return the domain's REST representations (the *View types), so
// a field reads the same value through either door. Authentication, scopes, rate
// limits and errors are the domain's; the request id, access log, authentication
// sequence and rate-limit headers are the door plumbing REST mounts too (package door).
// It imports domain and door; like rest, it must never import db, storage or jobs.
package graph
