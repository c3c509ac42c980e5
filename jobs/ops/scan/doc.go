// Package scan is the scan engine: a verdict (clean, suspicious, malicious) and
// findings from two layers run at once — ClamAV, through clamd's INSTREAM protocol on a
// unix or TCP socket, and built-in structural rules that need no signatures: the
// EICAR test file; PDF JavaScript, automatic actions, Launch actions and embedded
// files; Office macros (vbaProject.bin, ODF Basic, OLE macro storages); native
// executables inside archives or under another name; archive bombs (expansion ratio,
// nesting depth, entry count); and names or declared types that disagree with the
// bytes. The rules read each file once (mapped), look into zip, tar, gzip and bzip2
// archives and PDF object streams within a decompression budget, and never run or
// render anything.
//
// Scan is also what upload completion calls for validation.scan. A clamd that cannot
// be reached fails Check (the operation is then unavailable) and fails a scan with
// dependency_unavailable: a file is never passed unscanned. Where clamd is installed
// but not running, Daemon runs one of filemill's own on the machine's signatures, and
// says plainly why it cannot when it cannot (no signature database).
//
// It imports domain types, the mimetype detector and jobs/ops/runner (the process
// group of the clamd it may run) only; never HTTP, queue or database packages.
// clamdtest starts a real clamd for tests.
package scan
