package pdf

import (
	"context"
	"fmt"
	"os"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/filemill/filemill/domain"
)

// MaxCountPages is the largest page count CountPages and Verify accept.
const MaxCountPages = 100_000

// CountPages returns the number of pages of the PDF at path by walking its page tree
// (never trusting a /Count), without validating the rest of the file: cheap enough to
// run when an upload completes. ctx bounds it.
//
// Errors: encrypted_file when the page tree cannot be read without a password,
// corrupted_file (not a PDF, a page-tree loop, a tree that counts pages it lacks),
// unsupported_input (more than MaxCountPages pages), ctx's error.
func CountPages(ctx context.Context, path string) (int, error) {
	pc, err := readLight(ctx, path)
	if err != nil {
		return 0, err
	}
	return walkPages(pc.XRefTable, MaxCountPages, maxCountDecodedBytes)
}

// Verify checks that the PDF at path parses, that its page tree holds wantPages pages
// (any number when wantPages is 0) and that every page has a usable size. The engines
// call it on their outputs; the platform may call it on any PDF output.
//
// Errors: output_validation_failed with a sentence saying what is wrong; ctx's error.
func Verify(ctx context.Context, path string, wantPages int) error {
	pc, err := readLight(ctx, path)
	if err == nil {
		var n int
		if n, err = walkPages(pc.XRefTable, MaxCountPages, 0); err == nil && wantPages > 0 && n != wantPages {
			err = fmt.Errorf("it has %d pages instead of %d", n, wantPages)
		}
		if err == nil {
			pc.PageCount = 0
			if err = pc.EnsurePageCount(); err == nil && pc.PageCount != n {
				err = fmt.Errorf("its page tree counts %d pages but holds %d", pc.PageCount, n)
			}
		}
		if err == nil {
			err = pageBoxes(pc.XRefTable, n)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: "the output PDF does not verify: " + reason(err)}
	}
	return nil
}

func reason(err error) string {
	if de, ok := err.(*domain.Error); ok {
		return de.Message
	}
	return err.Error()
}

// Counting pages decodes cross-reference and object streams only, never page content or
// images: maxCountStreamBytes bounds one of them (a cross-reference stream of two
// million objects is 14 MiB), maxCountDecodedBytes the object streams the page tree
// sits in, all together. Decoding holds several times what it yields at its peak.
const (
	maxCountStreamBytes  = 16 << 20
	maxCountDecodedBytes = 64 << 20
)

// readLight parses the cross-reference table and objects without validating them.
func readLight(ctx context.Context, path string) (*model.Context, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pdf: open: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("pdf: stat: %w", err)
	}
	conf := &model.Configuration{
		Version: model.VersionStr, Reader15: true, ValidationMode: model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip, Eol: types.EolLF,
		Cmd: model.LISTINFO, Offline: true, Limits: limitsFor(st.Size(), maxCountStreamBytes),
	}
	var pc *model.Context
	err = guard(ctx, func() error {
		var err error
		pc, err = pdfcpu.ReadWithContext(ctx, ctxReader{ctx, f}, conf)
		return err
	})
	if err != nil {
		e := &Engine{log: discard}
		return nil, e.classify(ctx, err)
	}
	return pc, nil
}

// walkPages counts the leaves of the page tree, refusing loops, more than limit pages
// and, when maxDecoded is not 0, a tree whose object streams decode to more than
// maxDecoded bytes together (pdfcpu bounds each stream, not their sum).
func walkPages(x *model.XRefTable, limit int, maxDecoded int64) (int, error) {
	root, err := x.Catalog()
	if err != nil {
		return 0, corrupt("its catalog cannot be read")
	}
	ref, ok := root.Find("Pages")
	if !ok {
		return 0, corrupt("it has no page tree")
	}
	count := 0
	seen := map[int]bool{}
	var decoded int64
	streams := map[int]bool{}
	// charge decodes the object stream object n sits in, the first time the walk meets
	// it, and counts what it holds (the capacity of an object's bytes reaches the end of
	// its stream's).
	charge := func(n int) error {
		e, ok := x.Table[n]
		if maxDecoded == 0 || !ok || e == nil || e.ObjectStream == nil || streams[*e.ObjectStream] {
			return nil
		}
		streams[*e.ObjectStream] = true
		lz, ok := e.Object.(types.LazyObjectStreamObject)
		if !ok {
			return nil
		}
		if data, err := lz.GetData(); err == nil {
			if decoded += int64(cap(data)); decoded > maxDecoded {
				return &domain.Error{Code: domain.CodeUnsupportedInput,
					Message: fmt.Sprintf("the PDF's page tree sits in object streams of more than %d MiB", maxDecoded>>20)}
			}
		}
		return nil
	}
	var walk func(o types.Object, depth int) error
	walk = func(o types.Object, depth int) error {
		if depth > 64 {
			return corrupt("its page tree is nested too deeply")
		}
		if ir, ok := o.(types.IndirectRef); ok {
			if seen[ir.ObjectNumber.Value()] {
				return corrupt("its page tree loops back on itself")
			}
			seen[ir.ObjectNumber.Value()] = true
			if err := charge(ir.ObjectNumber.Value()); err != nil {
				return err
			}
		}
		d, err := x.DereferenceDict(o)
		if err != nil || d == nil {
			return corrupt("a node of its page tree cannot be read")
		}
		kids, hasKids := d.Find("Kids")
		if t := d.Type(); (t != nil && *t == "Page") || (!hasKids && t == nil) {
			count++
			if count > limit {
				return &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the PDF has more than %d pages", limit)}
			}
			return nil
		}
		arr, err := x.DereferenceArray(kids)
		if err != nil {
			return corrupt("a node of its page tree cannot be read")
		}
		for _, k := range arr {
			if err := walk(k, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(ref, 0); err != nil {
		return 0, err
	}
	return count, nil
}

// pageBoxes checks every page has a media box of positive size.
func pageBoxes(x *model.XRefTable, n int) error {
	for i := 1; i <= n; i++ {
		_, _, attrs, err := x.PageDict(i, false)
		if err != nil || attrs == nil || attrs.MediaBox == nil || attrs.MediaBox.Width() == 0 || attrs.MediaBox.Height() == 0 {
			return fmt.Errorf("page %d has no usable size", i)
		}
	}
	return nil
}

func corrupt(why string) error {
	return &domain.Error{Code: domain.CodeCorruptedFile, Message: "the PDF cannot be read: " + why}
}
