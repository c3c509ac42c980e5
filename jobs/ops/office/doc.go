// Package office is the office engine (operation convert): office documents, HTML,
// Markdown and images to PDF, documents and PDFs to plain text, text documents and
// spreadsheets to Markdown, and documents to page images through the platform's
// renderer. LibreOffice runs as a supervised pool of long-lived instances, each a
// Python UNO helper and its office in one process group, driven over a line protocol;
// macros never run and documents never fetch remote resources.
//
// Images become one page of their displayed size, their EXIF orientation applied
// (jobs/ops/internal/imagepdf places a JPEG as it is; libvips decodes other oriented
// images upright).
//
// It imports domain types, jobs/ops/runner, the shared readers and writers of
// jobs/ops/internal (docstruct, imagepdf, memcg, officeprops, pdfpages, vips, zipparts,
// fsutil), pdfcpu and its Markdown/HTML libraries; never HTTP, queue or database
// packages, nor other filemill engines.
package office
