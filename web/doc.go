// Package web is the bundled console (Vite + React + TypeScript), built and embedded
// into the binary. It imports nothing from filemill; the console talks to the GraphQL
// door over HTTP. The console arrives with its own capability; until then this package
// holds no code.
package web
