// Package cli is filemill's command-line client: login and profiles, upload, run,
// watch, download, and listing the deployment's files, jobs, batches, webhooks,
// events, usage and operations. It is a user of the API like any other program: it
// imports the Go SDK (client, client/api, client/webhook) and outside libraries,
// never the server's packages (domain, rest, graph, db, storage, jobs).
//
// Output: results go to standard output (a table, plain lines, or the API's JSON with
// --json); progress goes to standard error, as bars on a terminal and plain lines
// otherwise, nothing with --quiet.
//
// Exit codes (ExitCode): 0 ok, 1 a failed job or request, 2 a command line that cannot
// run as given, 3 not authenticated (no key, or the API answered 401), 4 not found.
package cli
