package ocr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/filemill/filemill/domain"
)

// MaxPages is the longest PDF the engine recognises; workers announce it.
func (e *Engine) MaxPages() int { return e.cfg.MaxPages }

var (
	_ domain.PageLimitedEngine = (*Engine)(nil)
	_ domain.LanguageEngine    = (*Engine)(nil)
)

// plan is ocr's plan: every page recognised and priced, in languages the OCR workers
// have (they announce them; any of them may take the job).
func plan(options any, in domain.PlanInput) (domain.Work, error) {
	o, err := domain.OptionsAs[Options](options)
	if err != nil {
		return domain.Work{}, err
	}
	if have := in.Engine.Languages; have != nil {
		langs, given := o.Languages, true
		if len(langs) == 0 {
			langs, given = []string{"eng"}, false
		}
		for i, l := range langs {
			if slices.Contains(have, l) {
				continue
			}
			param := "options.languages"
			if given {
				param = fmt.Sprintf("options.languages[%d]", i)
			}
			listed := strings.Join(have, ", ")
			if listed == "" {
				listed = "none"
			}
			return domain.Work{}, domain.OptionRefused(param, "no OCR worker has the language %q; every OCR worker has: %s", l, listed)
		}
	}
	return domain.Work{Pages: in.Pages, Outputs: max(len(o.Outputs), 1)}, nil
}
