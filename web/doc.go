// Package web is the console (Vite + React + TypeScript, sources in src/) built into
// dist/ and embedded into the binary, and the GraphQL playground page built beside it.
// It serves those files at /console/ and /graphql/play with their cache and security
// headers. It imports nothing from filemill: the console talks to the GraphQL door over
// HTTP and its websocket, like any other client.
//
// dist/ is committed, so a plain `go build` gives a working console; `make lint`
// rebuilds it and fails when the committed copy is stale.
package web
