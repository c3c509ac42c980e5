// Package pdfpages counts the pages of a PDF for the engines that read PDFs without
// owning a PDF library of their own (office, ocr): with the counter the platform plugs
// in (the pdf engine's), or else pdfcpu. Either way a failure comes back with its
// contract code, decided from the library's own errors, never from their wording.
package pdfpages

import (
	"context"
	"errors"
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"

	"github.com/filemill/filemill/domain"
)

// Counter counts a PDF's pages; its errors carry contract codes.
type Counter func(ctx context.Context, path string) (int, error)

// Count returns the pages of the PDF at path, with count when it is set. Errors:
// encrypted_file (password-protected), corrupted_file (unreadable, or no pages), the
// counter's own codes (unsupported_input for limits); ctx's error when it ends.
func Count(ctx context.Context, count Counter, path string) (int, error) {
	var n int
	var err error
	if count != nil {
		n, err = count(ctx, path)
	} else {
		n, err = pdfcpuCount(path)
	}
	if err == nil && n < 1 {
		return 0, domain.Errorf(domain.CodeCorruptedFile, "the PDF has no pages")
	}
	if err == nil {
		return n, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return 0, ctxErr
	}
	if de := domain.AsError(err); de != nil {
		return 0, de
	}
	if errors.Is(err, pdfcpu.ErrWrongPassword) || errors.Is(err, pdfcpu.ErrOwnerPasswordRequired) || errors.Is(err, pdfcpu.ErrEncrypted) {
		return 0, &domain.Error{Code: domain.CodeEncryptedFile, Message: "the PDF is password-protected", Cause: err}
	}
	return 0, &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF cannot be read", Cause: err}
}

func pdfcpuCount(path string) (n int, err error) {
	defer func() {
		if p := recover(); p != nil { // pdfcpu panics on some malformed input
			err = fmt.Errorf("pdfcpu: %v", p)
		}
	}()
	return api.PageCountFile(path)
}
