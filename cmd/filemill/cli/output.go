package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/filemill/filemill/client"
)

// A list or a resource is printed as the API wrote it with --json, and as a table
// otherwise: every command reads the raw answer and decodes it into the SDK's type only
// for the table, so --json is exactly what the API answered.

// column is one column of a table of T.
type column[T any] struct {
	title string
	value func(T) string
}

// field is one line of a resource's details.
type field struct{ name, value string }

// pageFunc fetches the page of a list after cursor (nil: the first), limit items long
// (nil: the API's default).
type pageFunc func(ctx context.Context, c *client.Client, cursor *string, limit *int) (*http.Response, error)

// listOptions are the flags of every list.
type listOptions struct {
	asJSON bool
	all    bool
	limit  int
	after  string
}

func (o *listOptions) register(c *cobra.Command, paged bool) {
	c.Flags().BoolVar(&o.asJSON, "json", false, "print the API's JSON: the page as one document, or with --all one item per line (NDJSON)")
	if paged {
		c.Flags().BoolVar(&o.all, "all", false, "every page, following next_cursor")
		c.Flags().IntVar(&o.limit, "limit", 0, "items per page, 1–100 (default: the API's, 20)")
		c.Flags().StringVar(&o.after, "starting-after", "", "the next_cursor of the page before")
	}
}

// listPage is the envelope of every list.
type listPage[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// printList prints a list: one page, or every page with --all.
func printList[T any](c *cobra.Command, g *globals, cl *client.Client, page pageFunc, cols []column[T], o listOptions) error {
	ctx, w := c.Context(), out(c)
	var limit *int
	if o.limit != 0 {
		if o.limit < 1 || o.limit > 100 {
			return usagef(c.CommandPath(), "--limit must be between 1 and 100")
		}
		limit = &o.limit
	}
	var start *string
	if o.after != "" {
		start = &o.after
	}
	if !o.all {
		raw, err := client.Decode[json.RawMessage](page(ctx, cl, start, limit))
		if err != nil {
			return err
		}
		if o.asJSON {
			return writeJSON(w, *raw)
		}
		var p listPage[T]
		if err := json.Unmarshal(*raw, &p); err != nil {
			return fmt.Errorf("decode the list: %w", err)
		}
		t := newTable(w, cols)
		for _, item := range p.Data {
			t.row(item)
		}
		if err := t.flush(); err != nil {
			return err
		}
		if len(p.Data) == 0 {
			g.note(c, "(none)")
		}
		if p.HasMore && p.NextCursor != nil {
			g.note(c, "more: --starting-after %s, or --all", *p.NextCursor)
		}
		return nil
	}
	items := client.Pages[json.RawMessage](func(cursor *string) (*http.Response, error) {
		if cursor == nil {
			cursor = start
		}
		return page(ctx, cl, cursor, limit)
	})
	t := newTable(w, cols)
	n := 0
	for raw, err := range items {
		if err != nil {
			return err
		}
		if o.asJSON {
			if err := writeJSONLine(w, raw); err != nil {
				return err
			}
			continue
		}
		var item T
		if err := json.Unmarshal(raw, &item); err != nil {
			return fmt.Errorf("decode an item: %w", err)
		}
		t.row(item)
		n++
		// A long walk is printed as it goes, not held whole.
		if n%100 == 0 {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	if n == 0 && !o.asJSON {
		g.note(c, "(none)")
	}
	return t.flush()
}

// printOne prints one resource: its JSON with --json, else its details.
func printOne[T any](c *cobra.Command, resp *http.Response, err error, asJSON bool, details func(T) []field, more func(io.Writer, T) error) error {
	raw, err := client.Decode[json.RawMessage](resp, err)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out(c), *raw)
	}
	var v T
	if err := json.Unmarshal(*raw, &v); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	w := out(c)
	if err := printFields(w, details(v)); err != nil {
		return err
	}
	if more != nil {
		return more(w, v)
	}
	return nil
}

func newFieldWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// writeJSON writes one JSON document as the API wrote it.
func writeJSON(w io.Writer, raw []byte) error {
	_, err := w.Write(append(bytes.TrimSpace(raw), '\n'))
	return err
}

// writeJSONLine writes a JSON value on one line (NDJSON).
func writeJSONLine(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// encodeJSONLine writes v as one JSON line.
func encodeJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// table writes rows under a header, columns aligned.
type table[T any] struct {
	tw     *tabwriter.Writer
	cols   []column[T]
	header bool
}

func newTable[T any](w io.Writer, cols []column[T]) *table[T] {
	return &table[T]{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), cols: cols}
}

func (t *table[T]) row(v T) {
	if !t.header {
		titles := make([]string, len(t.cols))
		for i, c := range t.cols {
			titles[i] = c.title
		}
		fmt.Fprintln(t.tw, strings.Join(titles, "\t"))
		t.header = true
	}
	vals := make([]string, len(t.cols))
	for i, c := range t.cols {
		vals[i] = cell(c.value(v))
	}
	fmt.Fprintln(t.tw, strings.Join(vals, "\t"))
}

func (t *table[T]) flush() error { return t.tw.Flush() }

// cell keeps a value on one line of its column.
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

// Formatting helpers of the tables.

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return when(*t)
}

func str[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func num(p *int) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

func sizePtr(p *int) string {
	if p == nil {
		return ""
	}
	return humanBytes(int64(*p))
}

// humanBytes writes a size in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
