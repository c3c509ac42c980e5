package aireadytest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// AddRenderedBreaks writes out, a copy of the DOCX at docx with the page breaks of
// its layout in pdf (a PDF LibreOffice made of it) saved as Word saves them: a
// w:lastRenderedPageBreak where each page after the first begins (inside the run,
// splitting its text where the page begins within it), and docProps/app.xml's Pages
// set to the PDF's page count. The page starts are found by the first words of each
// page's text (pdftotext) in the document's text; a page whose start cannot be found
// fails tb. It returns the page count.
func AddRenderedBreaks(tb testing.TB, docx, pdf, out string) int {
	tb.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		tb.Fatal("pdftotext is missing: apt-get install poppler-utils")
	}
	txt, err := exec.Command("pdftotext", "-enc", "UTF-8", pdf, "-").Output()
	if err != nil {
		tb.Fatalf("pdftotext %s: %v", pdf, err)
	}
	pages := strings.Split(strings.TrimRight(string(txt), "\f"), "\f")
	zr, err := zip.OpenReader(docx)
	if err != nil {
		tb.Fatal(err)
	}
	defer zr.Close()
	parts := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			tb.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			tb.Fatal(err)
		}
		parts[f.Name] = b
		names = append(names, f.Name)
	}
	doc, err := withBreaks(string(parts["word/document.xml"]), pages)
	if err != nil {
		tb.Fatalf("%s: %v", docx, err)
	}
	parts["word/document.xml"] = []byte(doc)
	app := string(parts["docProps/app.xml"])
	pagesTag := fmt.Sprintf("<Pages>%d</Pages>", len(pages))
	if re := regexp.MustCompile(`<Pages>\d*</Pages>`); re.MatchString(app) {
		app = re.ReplaceAllString(app, pagesTag)
	} else if i := strings.Index(app, "</Properties>"); i >= 0 {
		app = app[:i] + pagesTag + app[i:]
	} else {
		tb.Fatalf("%s: no docProps/app.xml to record the page count in", docx)
	}
	parts["docProps/app.xml"] = []byte(app)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(parts[n]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	return len(pages)
}

var textElement = regexp.MustCompile(`<w:t(?:\s[^>]*)?>([^<]*)</w:t>`)

// wordTokens are s's words as letters and digits, lower case, with where each begins.
func wordTokens(s string) (toks []string, at []int) {
	start := -1
	for i, r := range s + " " {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			toks = append(toks, strings.ToLower(s[start:i]))
			at = append(at, start)
			start = -1
		}
	}
	return toks, at
}

// withBreaks puts a rendered page break in document.xml before the first words of
// each page after the first.
func withBreaks(doc string, pages []string) (string, error) {
	type pos struct{ elem, off int } // the w:t element and the byte in its text
	locs := textElement.FindAllStringSubmatchIndex(doc, -1)
	var toks []string
	var where []pos
	texts := make([]string, len(locs))
	for i, m := range locs {
		texts[i] = html.UnescapeString(doc[m[2]:m[3]])
		ts, at := wordTokens(texts[i])
		for k, t := range ts {
			toks = append(toks, t)
			where = append(where, pos{i, at[k]})
		}
	}
	const need = 4
	splits := map[int][]int{} // element → offsets a page begins at
	cursor := 0
	for n, p := range pages[1:] {
		want, _ := wordTokens(p)
		if len(want) == 0 {
			return "", fmt.Errorf("page %d has no text", n+2)
		}
		// A page may begin with a list item's number, which is no text of the document:
		// the first words found in it begin the page.
		found := -1
		for skip := 0; skip <= 3 && skip < len(want) && found < 0; skip++ {
			w := want[skip:min(skip+need, len(want))]
			for j := cursor; j+len(w) <= len(toks) && found < 0; j++ {
				ok := true
				for k, t := range w {
					ok = ok && toks[j+k] == t
				}
				if ok {
					found = j
				}
			}
		}
		if found < 0 {
			return "", fmt.Errorf("the start of page %d (%q) is not in the document's text", n+2, strings.Join(want[:min(need, len(want))], " "))
		}
		splits[where[found].elem] = append(splits[where[found].elem], where[found].off)
		cursor = found + 1
	}
	var b strings.Builder
	last := 0
	for i, m := range locs {
		offs := splits[i]
		if len(offs) == 0 {
			continue
		}
		b.WriteString(doc[last:m[0]])
		prev := 0
		for _, off := range offs {
			if off > prev {
				fmt.Fprintf(&b, `<w:t xml:space="preserve">%s</w:t>`, html.EscapeString(texts[i][prev:off]))
			}
			b.WriteString("<w:lastRenderedPageBreak/>")
			prev = off
		}
		fmt.Fprintf(&b, `<w:t xml:space="preserve">%s</w:t>`, html.EscapeString(texts[i][prev:]))
		last = m[1]
	}
	b.WriteString(doc[last:])
	return b.String(), nil
}
