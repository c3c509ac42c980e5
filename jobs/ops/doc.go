// Package ops is the home of the processing engines, one package per engine (inspect,
// and the others beside it). Each turns input bytes plus options into artifacts in a
// work directory and knows nothing of HTTP, queues or databases: an engine imports the
// domain types and its own engine library, never another filemill package.
package ops
