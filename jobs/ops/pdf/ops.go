package pdf

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/pagerange"
)

// merge appends in.Inputs (options.file_ids, resolved by the platform) to in.Path.
func (e *Engine) merge(ctx context.Context, in domain.EngineInput, o MergeOptions) (*domain.EngineOutput, error) {
	if len(in.Inputs) != len(o.FileIDs) {
		return nil, fmt.Errorf("pdf.merge: %d files listed but %d handed over", len(o.FileIDs), len(in.Inputs))
	}
	dest, err := e.read(ctx, in.Path, model.MERGECREATE)
	if err != nil {
		return nil, err
	}
	dest.EnsureVersionForWriting()
	total := dest.PageCount
	for i, f := range in.Inputs {
		param := fmt.Sprintf("options.file_ids[%d]", i)
		src, err := e.read(ctx, f.Path, model.MERGECREATE)
		if err != nil {
			return nil, withParam(err, param)
		}
		if total += src.PageCount; total > e.cfg.MaxPages {
			return nil, unsupported("the merged PDF would have %d pages; at most %d are allowed", total, e.cfg.MaxPages)
		}
		err = guard(ctx, func() error { return pdfcpu.MergeXRefTables(f.FileID, src, dest, false, false) })
		if err != nil {
			return nil, withParam(e.classify(ctx, err), param)
		}
		progress(in, i+1, len(in.Inputs)+1)
	}
	name := domain.OutputStem(in.Filename) + "-merged.pdf"
	return e.finish(ctx, in, dest, name, total)
}

// withParam names the input a per-file error belongs to.
func withParam(err error, param string) error {
	if de, ok := err.(*domain.Error); ok && de.Param == "" {
		c := *de
		c.Param = param
		c.Message = param[len("options."):] + ": " + c.Message
		return &c
	}
	return err
}

// pages selects, reorders, rotates and deletes pages, all numbered as in the input.
func (e *Engine) pages(ctx context.Context, in domain.EngineInput, o PagesOptions) (*domain.EngineOutput, error) {
	pc, err := e.read(ctx, in.Path, model.COLLECT)
	if err != nil {
		return nil, err
	}
	n := pc.PageCount
	seq := make([]int, n)
	for i := range seq {
		seq[i] = i + 1
	}
	if o.Pages != "" {
		if seq, err = e.selection(o.Pages, n, "options.pages"); err != nil {
			return nil, err
		}
	}
	if o.Delete != "" {
		del, err := e.selection(o.Delete, n, "options.delete")
		if err != nil {
			return nil, err
		}
		seq = slices.DeleteFunc(seq, func(p int) bool { return slices.Contains(del, p) })
		if len(seq) == 0 {
			return nil, domain.InvalidParam("options.delete", "no page would be left")
		}
	}
	for i, r := range o.Rotate {
		pages, err := e.selection(r.Pages, n, fmt.Sprintf("options.rotate[%d].pages", i))
		if err != nil {
			return nil, err
		}
		set := types.IntSet{}
		for _, p := range pages {
			set[p] = true
		}
		if err := guard(ctx, func() error { return pdfcpu.RotatePages(pc, set, r.Angle) }); err != nil {
			return nil, e.classify(ctx, err)
		}
	}
	out := pc
	if !isIdentity(seq, n) {
		err = guard(ctx, func() error {
			var err error
			out, err = pdfcpu.ExtractPages(pc, seq, false)
			return err
		})
		if err != nil {
			return nil, e.classify(ctx, err)
		}
	}
	return e.finish(ctx, in, out, domain.OutputStem(in.Filename)+".pdf", len(seq))
}

func isIdentity(seq []int, n int) bool {
	if len(seq) != n {
		return false
	}
	for i, p := range seq {
		if p != i+1 {
			return false
		}
	}
	return true
}

func (e *Engine) selection(s string, n int, param string) ([]int, error) {
	sel, err := pagerange.Parse(s)
	if err == nil {
		var pages []int
		if pages, err = sel.Pages(n, e.cfg.MaxPages); err == nil {
			return pages, nil
		}
	}
	return nil, domain.InvalidParam(param, "%s", err.Error())
}

// split writes one PDF per part.
func (e *Engine) split(ctx context.Context, in domain.EngineInput, o SplitOptions) (*domain.EngineOutput, error) {
	pc, err := e.read(ctx, in.Path, model.SPLIT)
	if err != nil {
		return nil, err
	}
	n := pc.PageCount
	var parts [][]int
	if o.Every != nil {
		for from := 1; from <= n; from += *o.Every {
			part := make([]int, 0, min(*o.Every, n-from+1))
			for p := from; p < from+*o.Every && p <= n; p++ {
				part = append(part, p)
			}
			parts = append(parts, part)
		}
	} else {
		for i, r := range o.Ranges {
			part, err := e.selection(r, n, fmt.Sprintf("options.ranges[%d]", i))
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		}
	}
	stem := domain.OutputStem(in.Filename)
	width := len(fmt.Sprint(len(parts)))
	out := &domain.EngineOutput{}
	for i, part := range parts {
		var pctx *model.Context
		err := guard(ctx, func() error {
			var err error
			pctx, err = pdfcpu.ExtractPages(pc, part, false)
			return err
		})
		if err != nil {
			return nil, e.classify(ctx, err)
		}
		name := fmt.Sprintf("%s-part-%0*d.pdf", stem, width, i+1)
		res, err := e.finish(ctx, in, pctx, name, len(part))
		if err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, res.Artifacts...)
		progress(in, i+1, len(parts))
	}
	return out, nil
}

// finish writes pc as name into the work directory and verifies it has pages pages.
func (e *Engine) finish(ctx context.Context, in domain.EngineInput, pc *model.Context, name string, pages int) (*domain.EngineOutput, error) {
	path := filepath.Join(in.WorkDir, name)
	if err := e.write(ctx, pc, path); err != nil {
		return nil, err
	}
	if err := Verify(ctx, path, pages); err != nil {
		return nil, err
	}
	return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{{Name: name, MIMEType: pdfMIME, Path: path, Verified: true}}}, nil
}

func progress(in domain.EngineInput, done, total int) {
	if in.Progress != nil && total > 0 {
		in.Progress(done * 100 / total)
	}
}
