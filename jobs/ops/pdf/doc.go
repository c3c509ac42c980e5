// Package pdf is the engine of the PDF operations on pdfcpu: pdf.merge, pdf.pages,
// pdf.split and pdf.compress. It also exports CountPages (pages at upload completion)
// and Verify (the check of any PDF output). It knows nothing of HTTP, queues or
// databases; its errors are *domain.Error with the contract's codes.
package pdf
