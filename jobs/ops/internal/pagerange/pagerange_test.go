package pagerange

import (
	"slices"
	"testing"
)

func TestParseAndExpand(t *testing.T) {
	cases := []struct {
		in    string
		count int
		want  []int
	}{
		{"1-3,7,9-", 10, []int{1, 2, 3, 7, 9, 10}},
		{"3,1,2", 3, []int{3, 1, 2}},
		{" 2 - 4 ", 5, []int{2, 3, 4}},
		{"5-3", 5, []int{5, 4, 3}},
		{"1,1", 2, []int{1, 1}},
		{"4-", 4, []int{4}},
	}
	for _, c := range cases {
		sel, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		got, err := sel.Pages(c.count, 100)
		if err != nil || !slices.Equal(got, c.want) {
			t.Fatalf("%q of %d = %v, %v; want %v", c.in, c.count, got, err, c.want)
		}
	}
}

func TestRejects(t *testing.T) {
	for _, in := range []string{"", "0", "a", "1-b", "-3", "1,,2", "1-2-3", "+1", "1.5"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
	for _, c := range []struct {
		in    string
		count int
	}{{"6", 5}, {"6-", 5}, {"2-9", 5}, {"1-", 0}} {
		sel, err := Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sel.Pages(c.count, 100); err == nil {
			t.Errorf("%q of %d pages accepted", c.in, c.count)
		}
	}
	sel, _ := Parse("1-100000")
	if _, err := sel.Pages(100000, 1000); err == nil {
		t.Error("limit not enforced")
	}
}

func TestUnique(t *testing.T) {
	if got := Unique([]int{3, 1, 3, 2, 1}); !slices.Equal(got, []int{3, 1, 2}) {
		t.Fatal(got)
	}
}

func TestPlan(t *testing.T) {
	sel, err := Parse("2,9-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sel.Plan(3, true, 100); err == nil {
		t.Fatal("page 9 of a counted 3-page document was planned")
	}
	got, err := sel.Plan(3, false, 100)
	if err != nil || !slices.Equal(got, []int{2, 9}) {
		t.Fatalf("an estimate of 3 pages: %v, %v; want the pages named, taken to exist", got, err)
	}
}
