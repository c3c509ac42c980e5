// Package inspect is the inspect engine: it reads a file's headers and structure and
// writes one JSON report (inspect.json) with the detected format, size and hash and, by
// format family, PDF, image, office-document or text facts. It never renders or fully
// decodes content, and bounds every read (pixels, pages, zip entries, XML bytes), so a
// hostile file costs little more than reading its bytes once.
//
// It imports domain types, pdfcpu, golang.org/x/image and the readers it shares with
// other engines (jobs/ops/internal: officeprops, the office page counter; zipparts,
// the bounded zip walker); never HTTP, queue or database packages, nor other filemill
// engines.
package inspect
