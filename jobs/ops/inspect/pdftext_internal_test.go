package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestContentScannerOperators checks the lexer on the syntax that hides operators:
// strings, hex strings, arrays, inline dictionaries, comments and inline images.
func TestContentScannerOperators(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content string
		want          []string // operators, with "!" appended when the last operand holds text
	}{
		{"Simple", "BT /F1 12 Tf (Hi) Tj ET", []string{"BT", "Tf", "Tj!", "ET"}},
		{"EmptyString", "() Tj", []string{"Tj"}},
		{"NestedParensAndEscapes", `(a \) (b) c\\) Tj`, []string{"Tj!"}},
		{"HexString", "<48 69> Tj <> Tj", []string{"Tj!", "Tj"}},
		{"ArrayWithText", "[(A) 120 (B)] TJ [ -250 ] TJ", []string{"TJ!", "TJ"}},
		{"ArrayEndAfterSpace", "[ (A) ] TJ ET", []string{"TJ!", "ET"}},
		{"NestedArray", "[[(x)]] TJ", []string{"TJ!"}},
		{"MarkedContentDict", "/Span << /ActualText (BT Tj) /Nested << /K [1 2] >> >> BDC EMC", []string{"BDC", "EMC"}},
		{"Comment", "% (fake) Tj\nq Q", []string{"q", "Q"}},
		{"InlineImage", "BI /W 4 /H 1 /CS /G /BPC 8 ID \x00Tj\xffEI EI Q", []string{"BI", "Q"}},
		{"NameEscapes", "/F#31 12 Tf", []string{"Tf"}},
		{"Keywords", "true false null 1 -2 .5 re", []string{"re"}},
		{"StrayDelimiters", ") > ] } >> Tj", []string{"Tj"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := contentScanner{data: []byte(tc.content)}
			var got []string
			var last operand
			for {
				tk := s.next()
				if tk.kind == tokEOF {
					break
				}
				if tk.kind != tokOperator {
					last = tk.operand
					continue
				}
				op := string(tk.op)
				if last.text {
					op += "!"
				}
				got = append(got, op)
				last = operand{}
				if op == "BI" {
					s.skipInlineImage()
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestContentScannerNames(t *testing.T) {
	t.Parallel()
	s := contentScanner{data: []byte("/F#31#2dBold")}
	require.Equal(t, "F1-Bold", s.next().name)
}

// TestContentScannerHostileNesting feeds a million unclosed or closed brackets,
// dictionaries and strings: the scanner must finish (within a bound that only a
// runaway scan would reach), consume everything, stop recursing at maxNesting and find
// the operator that follows well-formed nesting.
func TestContentScannerHostileNesting(t *testing.T) {
	t.Parallel()
	const n = 1_000_000
	type result struct {
		tokens   []tokenKind // top-level tokens, EOF excluded
		lastOp   string
		consumed bool
		depth    int
	}
	scan := func(t *testing.T, data string) result {
		t.Helper()
		done := make(chan result, 1)
		go func() {
			s := contentScanner{data: []byte(data)}
			var r result
			for {
				tk := s.next()
				if tk.kind == tokEOF {
					break
				}
				r.tokens = append(r.tokens, tk.kind)
				if tk.kind == tokOperator {
					r.lastOp = string(tk.op)
				}
			}
			r.consumed, r.depth = s.pos == len(s.data), s.depth
			done <- r
		}()
		select {
		case r := <-done:
			return r
		case <-time.After(time.Minute):
			t.Fatal("the scan of hostile nesting did not finish")
			return result{}
		}
	}
	count := func(ks []tokenKind, k tokenKind) int {
		c := 0
		for _, x := range ks {
			if x == k {
				c++
			}
		}
		return c
	}

	for _, c := range []string{"[", "<<", "(", "<"} {
		r := scan(t, strings.Repeat(c, n)+" Tj")
		require.True(t, r.consumed, "%q: all input consumed", c)
		require.Zero(t, r.depth, "%q: nesting unwound", c)
		require.Empty(t, r.lastOp, "%q: an operator inside unclosed nesting is no operator", c)
	}

	// Closed nesting: the scanner recurses maxNesting levels and no more, so the
	// closing brackets beyond those come back at the top level, and the operator after
	// them is found with the string's text.
	r := scan(t, strings.Repeat("[", n)+"(x)"+strings.Repeat("]", n)+" Tj")
	require.True(t, r.consumed)
	require.Zero(t, r.depth)
	require.Equal(t, tokArray, r.tokens[0])
	require.Equal(t, n-maxNesting, count(r.tokens, tokArrayEnd), "recursion stopped at maxNesting")
	require.Equal(t, "Tj", r.lastOp)

	r = scan(t, strings.Repeat("<<", n)+strings.Repeat(">>", n)+" Tj")
	require.True(t, r.consumed)
	require.Zero(t, r.depth)
	require.Equal(t, n-maxNesting, count(r.tokens, tokDictEnd), "recursion stopped at maxNesting")
	require.Equal(t, "Tj", r.lastOp)

	r = scan(t, strings.Repeat("(", n)+strings.Repeat(")", n)+" Tj")
	require.Equal(t, []tokenKind{tokString, tokOperator}, r.tokens, "balanced parentheses are one string")
	require.Equal(t, "Tj", r.lastOp)
}
