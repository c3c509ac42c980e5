package inspect

import (
	"strings"
	"testing"

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

func TestContentScannerHostileNesting(t *testing.T) {
	t.Parallel()
	// A million unclosed brackets and dictionaries must neither overflow the stack nor
	// take long.
	for _, c := range []string{"[", "<<", "(", "<"} {
		s := contentScanner{data: []byte(strings.Repeat(c, 1_000_000) + " Tj")}
		for s.next().kind != tokEOF {
		}
	}
}
