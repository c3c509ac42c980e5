// Package graph is the GraphQL front door: the *.graphqls schema, the code gqlgen
// generates from it (see gqlgen.yml at the module root), resolvers that call the domain
// services, and subscriptions to job and file events fed from the outbox.
//
// It imports domain only; like rest, it must never import db, storage or jobs. The
// schema arrives with the GraphQL capability; until then this package holds no code.
package graph
