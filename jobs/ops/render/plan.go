package render

import (
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/pagerange"
)

// MaxPages is the longest document the engine reads; workers announce it.
func (e *Engine) MaxPages() int { return e.pool.Config().MaxPages }

var _ domain.PageLimitedEngine = (*Engine)(nil)

// plan is pdf.render's plan: one image per selected page (a page listed twice is
// rendered once), each page priced; the selection names pages the document has, and
// the images fit in a job.
func plan(options any, in domain.PlanInput) (domain.Work, error) {
	o, err := domain.OptionsAs[Options](options)
	if err != nil {
		return domain.Work{}, err
	}
	pages := in.Pages
	if o.Pages != "" {
		sel, err := pagerange.Parse(o.Pages)
		if err != nil {
			return domain.Work{}, domain.InvalidParam("options.pages", "%s", err.Error())
		}
		limit := in.Engine.MaxPages
		if limit <= 0 {
			limit = 1_000_000
		}
		list, err := sel.Plan(in.Pages, in.Counted, limit)
		if err != nil {
			return domain.Work{}, domain.OptionRefused("options.pages", "%s", err.Error())
		}
		pages = len(pagerange.Unique(list))
	}
	if in.MaxOutputs > 0 && pages > in.MaxOutputs && (in.Counted || o.Pages != "") {
		return domain.Work{}, domain.OptionRefused("options.pages", "this renders %d pages, one image each; a job holds at most %d documents: choose pages",
			pages, in.MaxOutputs)
	}
	return domain.Work{Pages: pages, Outputs: pages}, nil
}
