// Package ops is the home of the processing engines and what they share.
//
// The engines, one package each: inspect, image, pdf, render, office, ocr, aiready
// and scan. Each has the same shape: a Config with DefaultConfig and Validate,
// New(Config) (*Engine, error), Check(ctx) (is it usable on this machine), Version,
// Close() error, Specs (the operations it declares, with their options types) and
// Run. An engine turns an input file plus its operation's options into artifacts in a
// work directory; it knows nothing of HTTP, queues or databases. It imports the domain
// types, its own libraries and the shared packages below, never another engine.
//
// Shared by the engines:
//   - pdfium: the pool of PDFium instances (text, rendering, page images), used by
//     render and aiready and, through the functions they are configured with, by ocr
//     and office;
//   - pagetext: the page text PDFium reads and OCR recognises, in one shape: aiready
//     takes its scanned pages' words in it, not in PDFium's;
//   - runner: child processes with limits and the supervisor of long-lived helpers
//     (LibreOffice for office, clamd for scan);
//   - internal/vips: the one libvips binding (image, pdf, pdfium, ocr, office);
//   - internal/pdfpages: the PDF page counter the engines that count pages without a
//     PDF library of their own are given (office, ocr);
//   - internal/officeprops: the one office page counter (inspect, office);
//   - enginetest: options decoded as the registry does, for tests that run an engine;
//   - internal/docstruct, imagepdf, pagerange, zipparts, fsutil: document structure,
//     images as PDF pages, page ranges, bounded zip reading, file helpers.
//
// Beside the engines: catalog lists every engine's operations and the presets (the
// registry every process builds), and probe counts the pages of stored files and
// verifies engine outputs for the platform.
package ops
