// Package ocr is the OCR engine: it recognises text in images and, page by page, in
// PDFs, with libtesseract in process. Each loaded tesseract instance keeps its language
// data between pages and jobs, and the pages of a job run in parallel, one core each.
// It writes plain text, words with boxes and confidences (JSON), and a searchable PDF.
//
// Images are read as they are displayed: libvips decodes an image with an EXIF
// orientation upright (jobs/ops/internal/vips). A scanned PDF page (one upright image
// covering it) is recognised from its image as stored, other pages are rendered by the
// platform's renderer.
//
// The searchable PDF is made as OCRmyPDF makes it: the input PDF keeps its pages,
// images and content, and each page without text of its own gets an invisible text
// layer (tesseract's glyph-less font, words on their baselines, written here from the
// recognised words and placed over the image they were read from). An image becomes a
// page of its displayed size: a JPEG embedded as it came, other images re-encoded (CCITT
// G4 when black and white, else JPEG). A PDF pdfcpu cannot read is rebuilt from its
// recognised page images.
//
// It imports domain types, libtesseract and leptonica (cgo, loaded at start by
// jobs/ops/internal/enginelib), pdfcpu, the PDFium pool (jobs/ops/pdfium, for the
// renderer it offers the platform) and jobs/ops/internal (vips, imagepdf, pdfpages);
// never HTTP, queue or database packages, nor other filemill engines.
package ocr
