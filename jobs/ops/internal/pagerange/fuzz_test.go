package pagerange

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/filemill/filemill/internal/hostile"
)

// format writes a selection back in the syntax Parse reads.
func format(s Selection) string {
	items := make([]string, len(s))
	for i, r := range s {
		switch {
		case r.To == 0:
			items[i] = strconv.Itoa(r.From) + "-"
		case r.To == r.From:
			items[i] = strconv.Itoa(r.From)
		default:
			items[i] = strconv.Itoa(r.From) + "-" + strconv.Itoa(r.To)
		}
	}
	return strings.Join(items, ",")
}

// FuzzPageRange: a selection parses into at most MaxItems items of pages from 1 to
// 1,000,000 that read back the same once written out, or is refused with a sentence;
// the pages it lists for a document are pages of that document, never more than the
// limit, and cost memory in proportion to the limit only.
func FuzzPageRange(f *testing.F) {
	for _, s := range []string{"1-3,7,9-", "3,1,2", " 2 - 4 ", "5-3", "1,1", "4-", "1-1000000", "0", "-1", "1--2", "+1",
		"1,,2", "1-", "999999999999999999999", "1-2-3", "", "1" + strings.Repeat(",1", MaxItems), "٣", "0x10", "1_000"} {
		f.Add(s, uint32(10), uint16(100))
	}
	f.Add("1-1000000,1000000-1", uint32(1_000_000), uint16(65535))
	f.Fuzz(func(t *testing.T, s string, count uint32, limit uint16) {
		var sel Selection
		var err error
		alloc := hostile.Allocated(func() { sel, err = Parse(s) })
		if bound := uint64(hostile.Slack + 32*len(s)); alloc > bound {
			t.Fatalf("parsing %d bytes allocated %d bytes", len(s), alloc)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a sentence")
			}
			return
		}
		if len(sel) == 0 || len(sel) > MaxItems {
			t.Fatalf("%q: %d items", s, len(sel))
		}
		for _, r := range sel {
			if r.From < 1 || r.From > 1_000_000 || r.To < 0 || r.To > 1_000_000 {
				t.Fatalf("%q: item %+v", s, r)
			}
		}
		written := format(sel)
		back, err := Parse(written)
		if err != nil || !slices.Equal(back, sel) {
			t.Fatalf("%q parsed as %+v, written %q, read back %+v (%v)", s, sel, written, back, err)
		}

		n := int(count % 2_000_000)
		lim := int(limit) + 1
		var pages []int
		alloc = hostile.Allocated(func() { pages, err = sel.Pages(n, lim) })
		if bound := uint64(hostile.Slack + 64*lim); alloc > bound {
			t.Fatalf("listing at most %d pages allocated %d bytes", lim, alloc)
		}
		if err == nil {
			if len(pages) > lim {
				t.Fatalf("%q: %d pages past the limit %d", s, len(pages), lim)
			}
			for _, p := range pages {
				if p < 1 || p > n {
					t.Fatalf("%q of %d pages lists page %d", s, n, p)
				}
			}
			u := Unique(pages)
			seen := map[int]bool{}
			for _, p := range u {
				if seen[p] {
					t.Fatalf("Unique(%v) repeats %d", pages, p)
				}
				seen[p] = true
			}
			for _, p := range pages {
				if !seen[p] {
					t.Fatalf("Unique(%v) lost %d", pages, p)
				}
			}
		}
		// An estimate refuses nothing but the limit: every page named is taken to exist.
		planned, err := sel.Plan(n, false, lim)
		if err != nil && !strings.Contains(err.Error(), "more than") {
			t.Fatalf("%q planned on an estimate of %d pages: %v", s, n, err)
		}
		if err == nil && len(planned) > lim {
			t.Fatalf("%q: planned %d pages past the limit %d", s, len(planned), lim)
		}
	})
}
