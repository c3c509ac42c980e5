// Package aiready is the engine of the ai-ready preset's last step (ai.extract): a
// document turned into markdown that keeps its structure (headings and their levels,
// lists, tables as pipe tables, reading order across columns, no running headers,
// footers or page numbers), the same as plain text, and chunks for retrieval with
// their pages, boxes, heading path and token counts.
//
// Documents whose own format carries their structure (DOCX, PPTX, XLSX, their ODF
// siblings, HTML, Markdown, CSV, text) are read through it (jobs/ops/internal/
// docstruct); where the format has pages, the PDF the preset's convert step made
// gives each block its pages and boxes. PDFs (and documents read no other way) are
// read from the text layer with PDFium (jobs/ops/pdfium: runs with positions, font
// sizes and weights, and the page's rules); pages without a text layer are recognised
// by the OCR function the worker plugs in. Layout is read from geometry alone: no
// model, no network. Tokens are counted with BPE vocabularies built into the binary.
package aiready
