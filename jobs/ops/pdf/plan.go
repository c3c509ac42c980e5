package pdf

import (
	"fmt"
	"slices"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/pagerange"
)

// Plans of the PDF operations: what a job will read and make, known before it runs
// from the pages counted at completion, so that what cannot run is refused at creation
// and a split is priced by the parts it makes.

// MaxPages is the longest document the engine reads; workers announce it.
func (e *Engine) MaxPages() int { return e.cfg.MaxPages }

var _ domain.PageLimitedEngine = (*Engine)(nil)

// planLimit bounds how many pages a selection may list: the engine's page limit when
// the workers tell it.
func planLimit(in domain.PlanInput) int {
	if in.Engine.MaxPages > 0 {
		return in.Engine.MaxPages
	}
	return MaxCountPages
}

// planSelection lists the pages a selection names, refusing pages the document does
// not have with the option's name.
func planSelection(s string, in domain.PlanInput, param string) ([]int, error) {
	sel, err := pagerange.Parse(s)
	if err != nil {
		return nil, domain.InvalidParam(param, "%s", err.Error())
	}
	pages, err := sel.Plan(in.Pages, in.Counted, planLimit(in))
	if err != nil {
		return nil, domain.OptionRefused(param, "%s", err.Error())
	}
	return pages, nil
}

// planPages is pdf.pages' plan: the page selection, deletions and rotations name pages
// the document has, and at least one page is left.
func planPages(options any, in domain.PlanInput) (domain.Work, error) {
	o, err := domain.OptionsAs[PagesOptions](options)
	if err != nil {
		return domain.Work{}, err
	}
	kept := in.Pages
	if o.Pages != "" {
		seq, err := planSelection(o.Pages, in, "options.pages")
		if err != nil {
			return domain.Work{}, err
		}
		kept = len(seq)
		if o.Delete != "" {
			del, err := planSelection(o.Delete, in, "options.delete")
			if err != nil {
				return domain.Work{}, err
			}
			kept = len(slices.DeleteFunc(seq, func(p int) bool { return slices.Contains(del, p) }))
		}
	} else if o.Delete != "" {
		del, err := planSelection(o.Delete, in, "options.delete")
		if err != nil {
			return domain.Work{}, err
		}
		kept = in.Pages - len(pagerange.Unique(del))
	}
	if kept <= 0 && in.Counted {
		return domain.Work{}, domain.OptionRefused("options.delete", "no page would be left")
	}
	for i, r := range o.Rotate {
		if _, err := planSelection(r.Pages, in, fmt.Sprintf("options.rotate[%d].pages", i)); err != nil {
			return domain.Work{}, err
		}
	}
	return domain.Work{Pages: in.Pages, Outputs: 1, OutPages: max(kept, 1)}, nil
}

// planSplit is pdf.split's plan: its parts, each a document priced on its own; the
// ranges name pages the document has, and the parts fit in a job.
func planSplit(options any, in domain.PlanInput) (domain.Work, error) {
	o, err := domain.OptionsAs[SplitOptions](options)
	if err != nil {
		return domain.Work{}, err
	}
	var parts int
	param := "options.ranges"
	if o.Every != nil {
		param = "options.every"
		parts = (in.Pages + *o.Every - 1) / *o.Every
	} else {
		for i, r := range o.Ranges {
			if _, err := planSelection(r, in, fmt.Sprintf("options.ranges[%d]", i)); err != nil {
				return domain.Work{}, err
			}
		}
		parts = len(o.Ranges)
	}
	if in.MaxOutputs > 0 && parts > in.MaxOutputs && (in.Counted || o.Every == nil) {
		return domain.Work{}, domain.OptionRefused(param, "this split makes %d parts of the document's %d pages; a job holds at most %d documents",
			parts, in.Pages, in.MaxOutputs)
	}
	return domain.Work{Pages: in.Pages, Outputs: max(parts, 1)}, nil
}
