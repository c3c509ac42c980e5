// Package inspect is the inspect engine: it reads a file's headers and structure and
// writes one JSON report (inspect.json) with the detected format, size and hash and, by
// format family, PDF, image, office-document or text facts. It never renders or fully
// decodes content, and bounds every read (pixels, pages, zip entries, XML bytes), so a
// hostile file costs little more than reading its bytes once.
//
// It imports domain types, pdfcpu and golang.org/x/image only; never HTTP, queue or
// database packages, nor other filemill packages.
package inspect
