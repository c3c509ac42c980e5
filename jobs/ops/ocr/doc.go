// Package ocr is the OCR engine: it recognises text in images and, page by page, in
// PDFs (rendered by the platform's renderer), with libtesseract in process. Each
// loaded tesseract instance keeps its language data between pages and jobs, and the
// pages of a job run in parallel, one core each. It writes plain text, words with
// boxes and confidences (JSON), and a searchable PDF.
//
// It imports domain types, libtesseract and leptonica (cgo), and pdfcpu; never HTTP,
// queue or database packages, nor other filemill engines.
package ocr
