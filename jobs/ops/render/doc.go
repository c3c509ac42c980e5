// Package render is the engine of pdf.render: PDF pages to PNG, JPEG or WebP images,
// one artifact per page, rendered by PDFium (jobs/ops/pdfium) on as many instances as
// the pool spares. It imports the domain types, the PDFium pool and
// jobs/ops/internal/pagerange; nothing else of jobs.
package render
