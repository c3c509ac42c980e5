// Package pdfium is the PDF rasteriser and text engine the engines share: pdf.render,
// OCR (pages rendered for recognition, or a scanned page's image read as stored),
// image.convert (PDF page 1) and ai-ready (text with positions, font sizes and weights). It runs PDFium compiled to WebAssembly
// (go-pdfium's build) on wazero: a hostile PDF cannot reach the worker's memory, each
// instance has a memory ceiling, and pages render progressively so a deadline stops
// a render at PDFium's next checkpoint rather than at the end of the page.
//
// One Pool per process holds a few PDFium instances (each renders one page at a time on
// one core); a Document is one open PDF bound to one instance. Rendered pages are
// encoded with libvips (jobs/ops/internal/vips). The package knows nothing of jobs,
// queues or HTTP; its errors are *domain.Error with the contract's codes.
package pdfium
