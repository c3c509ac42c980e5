package aiready

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestListMarker(t *testing.T) {
	for in, want := range map[string]string{
		"• apples": "-|apples", "•apples": "-|apples", "- pears": "-|pears", "3. plums": "3.|plums",
		"iv) figs": "iv)|figs", "(a) kiwis": "(a)|kiwis", "¢ misread bullet": "-|misread bullet",
	} {
		m, rest, _, ok := listMarker(in)
		if !ok || m+"|"+rest != want {
			t.Errorf("listMarker(%q) = %q %q %v, want %s", in, m, rest, ok, want)
		}
	}
	for _, in := range []string{"-5 degrees", "2024. A year", "e.g. this", "Apples", "1.5 litres", "°C rises", "A. Smith wrote"} {
		if m, _, _, ok := listMarker(in); ok {
			t.Errorf("listMarker(%q) = %q, want no marker", in, m)
		}
	}
}

func TestPageNumberPattern(t *testing.T) {
	for _, s := range []string{"12", "- 12 -", "page 3", "page 3 of 10", "3 / 10", "xiv", "p. 4"} {
		if !pageNumber.MatchString(s) {
			t.Errorf("%q is a page number", s)
		}
	}
	for _, s := range []string{"chapter 3", "12 apples", "total 2024 revenue"} {
		if pageNumber.MatchString(s) {
			t.Errorf("%q is not a page number", s)
		}
	}
}

func TestSplitText(t *testing.T) {
	s := strings.Repeat("Short sentence here. ", 30) + strings.Repeat("x", 250)
	for _, c := range []struct{ chars, tokens int }{{200, 1000}, {57, 1000}, {2000, 20}, {2000, 3}} {
		ch, err := newChunker(Options{ChunkSize: c.chars, MaxTokens: c.tokens})
		if err != nil {
			t.Fatal(err)
		}
		parts := ch.split(s, c.tokens)
		for _, p := range parts {
			if n := utf8.RuneCountInString(p); n > c.chars || n == 0 || ch.tok.count(p) > c.tokens {
				t.Fatalf("%+v: piece of %d characters, %d tokens", c, n, ch.tok.count(p))
			}
		}
		if got := strings.ReplaceAll(strings.Join(parts, ""), " ", ""); got != strings.ReplaceAll(s, " ", "") {
			t.Fatalf("%+v: text lost", c)
		}
	}
	// Sentences stay whole when they fit.
	ch, _ := newChunker(Options{ChunkSize: 100, MaxTokens: 512})
	for _, p := range ch.split(strings.Repeat("Short sentence here. ", 30), 512) {
		if !strings.HasSuffix(p, ".") {
			t.Fatalf("piece cut inside a sentence: %q", p)
		}
	}
}
