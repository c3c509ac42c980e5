// Package enginelib keeps the engines' C libraries (libvips, tesseract, leptonica,
// libgomp, libwebp, GLib) out of the process until an engine needs them. Linked as
// usual, the dynamic loader maps them and some hundred libraries they depend on at every
// start, and runs their constructors: some 20 MiB of resident memory and tens of
// milliseconds before main in every process of the binary, the client commands
// included. Here each function filemill's C code calls is a stub that loads them on
// first use (Load, called by the engines as they start, does it explicitly and reports
// a failure as an error). The stubs are x86-64 code; elsewhere the libraries are linked
// as usual.
package enginelib
