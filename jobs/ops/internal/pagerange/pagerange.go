// Package pagerange reads page selections such as "1-3,7,9-": the syntax shared by
// the PDF operations' options.
package pagerange

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Range is one item of a selection: From..To inclusive, To = 0 for "to the end".
// From > To (with To > 0) runs backwards.
type Range struct{ From, To int }

// Selection is a parsed selection, in the order written.
type Selection []Range

// MaxItems bounds how many comma-separated items a selection may have.
const MaxItems = 1000

// Parse reads a selection: comma-separated items, each "N", "N-M" or "N-" (from N to
// the last page); pages count from 1; spaces are ignored. "5-3" is 5, 4, 3.
func Parse(s string) (Selection, error) {
	s = strings.ReplaceAll(s, " ", "")
	if s == "" {
		return nil, errors.New("the page selection is empty")
	}
	items := strings.Split(s, ",")
	if len(items) > MaxItems {
		return nil, fmt.Errorf("the page selection has %d items; at most %d are allowed", len(items), MaxItems)
	}
	sel := make(Selection, 0, len(items))
	for _, it := range items {
		from, to, isRange := strings.Cut(it, "-")
		a, err := pageNumber(from, it)
		if err != nil {
			return nil, err
		}
		r := Range{From: a, To: a}
		if isRange {
			r.To = 0
			if to != "" {
				if r.To, err = pageNumber(to, it); err != nil {
					return nil, err
				}
			}
		}
		sel = append(sel, r)
	}
	return sel, nil
}

func pageNumber(s, item string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1_000_000 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%q is not a page or a range of pages (such as 3, 1-3 or 9-)", item)
	}
	return n, nil
}

// Pages lists the selected pages of a document of count pages, in selection order
// (repeats kept). It fails when an item names a page past the end, or when the list
// would exceed limit pages.
func (s Selection) Pages(count, limit int) ([]int, error) {
	var out []int
	for _, r := range s {
		to := r.To
		if to == 0 {
			to = count
			if r.From > count {
				return nil, fmt.Errorf("the selection starts at page %d, but the document has %d pages", r.From, count)
			}
		}
		if r.From > count || to > count {
			return nil, fmt.Errorf("page %d does not exist: the document has %d pages", max(r.From, to), count)
		}
		step := 1
		if to < r.From {
			step = -1
		}
		for p := r.From; ; p += step {
			if len(out) >= limit {
				return nil, fmt.Errorf("the selection lists more than %d pages", limit)
			}
			out = append(out, p)
			if p == to {
				break
			}
		}
	}
	return out, nil
}

// Unique returns pages without repeats, first occurrences kept in order.
func Unique(pages []int) []int {
	seen := make(map[int]bool, len(pages))
	out := pages[:0:0]
	for _, p := range pages {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Plan lists the pages s selects in a document whose pages are known before it is
// read, to plan a job: as Pages does when count was counted; when it is only an
// estimate, a page past it is taken to exist rather than refused.
func (s Selection) Plan(count int, counted bool, limit int) ([]int, error) {
	if !counted {
		for _, r := range s {
			count = max(count, r.From, r.To)
		}
	}
	return s.Pages(count, limit)
}
