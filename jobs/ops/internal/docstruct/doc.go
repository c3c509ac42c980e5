// Package docstruct is a document's structure — headings with their levels,
// paragraphs, nested lists, tables with their header row, images by their alt text,
// code, footnotes, a slide's speaker notes, and the sections of slides and sheets —
// read from the document's own format (DOCX, PPTX, XLSX, ODT, ODP, ODS, HTML,
// Markdown, CSV, plain text), and rendered as Markdown and as plain text. Where a
// block lies on the pages of a PDF made from the document is found by matching its
// words (Locate). The ai engine and the office engine's Markdown output share it.
//
// It reads files and nothing else: no network, no LibreOffice, no engine packages.
package docstruct
