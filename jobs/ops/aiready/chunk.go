package aiready

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/filemill/filemill/jobs/ops/internal/docstruct"
)

// Chunk is one piece of the document for retrieval.
type Chunk struct {
	Index int `json:"index"`
	// Text is the chunk's markdown.
	Text string `json:"text"`
	// EmbedText is Text with the heading path before it: the text meant for
	// embedding, present when contextualize is set (Tokens then counts it).
	EmbedText string `json:"embed_text,omitempty"`
	// Characters is Text's length in characters (Unicode code points).
	Characters int `json:"characters"`
	// Tokens is the count of Text's (or EmbedText's) tokens in the tokenizer named by
	// chunks.json.
	Tokens int `json:"tokens"`
	// Pages are the 1-based pages the chunk's text comes from, ascending; empty for
	// documents without pages (HTML, Markdown, CSV, plain text).
	Pages []int `json:"pages"`
	// PageSource says where Pages come from: "layout" (the pages of the PDF read, or
	// made from the document, where Boxes show the text) or "hints" (the page breaks
	// the document's application saved in it, without boxes); absent without pages.
	PageSource string `json:"page_source,omitempty"`
	// Boxes are the regions of those pages the text is drawn in: one per run of text
	// in a column of a page, in PDF points from the page's top-left corner.
	Boxes []docstruct.Box `json:"boxes"`
	// HeadingPath is the headings the chunk falls under, outermost first.
	HeadingPath []string `json:"heading_path"`
	// Elements are the kinds of the elements it holds, in order: heading, paragraph,
	// list, table, image, code, footnote, notes.
	Elements []string `json:"elements"`
}

// chunker cuts a document into chunks: a heading starts a chunk (unless merge_small
// lets small neighbours under one heading share one), blocks are added while the
// chunk keeps within max_tokens and chunk_size, a block larger than a chunk is cut at
// sentences (then words), a table between rows with its header repeated; a chunk
// never spans two top-level sections (slides, sheets, the document's outermost
// headings) unless cross_sections is set.
type chunker struct {
	o      Options
	tok    *counter
	out    []Chunk
	source string // the document's PageSource

	path []docstruct.Block // the heading path: headings, outermost first
	top  int               // the outermost heading level of the document

	cur       []piece
	curTokens int
	curChars  int
	prevChunk *piece // the last piece of the chunk before, for overlap
}

// piece is a block's markdown, or a part of it that fits in a chunk.
type piece struct {
	block   *docstruct.Block
	text    string
	tokens  int
	chars   int
	boxes   []docstruct.Box
	pages   []int // without boxes: the block's pages as its saved breaks tell
	path    []string
	heading bool
}

func newChunker(o Options) (*chunker, error) {
	t, err := newCounter(o.Tokenizer)
	if err != nil {
		return nil, err
	}
	return &chunker{o: o, tok: t}, nil
}

// budget is how many tokens a chunk's own pieces may take: max_tokens less the
// overlap carried in and the heading path put before it.
func (c *chunker) budget(path []string) int {
	// Two tokens spare: tokens may merge or split where parts are joined.
	b := c.o.MaxTokens - c.o.OverlapTokens - 2
	if c.o.Contextualize && len(path) > 0 {
		b -= c.tok.count(contextPrefix(path)) + 1
	}
	return max(b, 16)
}

func contextPrefix(path []string) string { return strings.Join(path, " > ") + "\n\n" }

func (c *chunker) chunks(d *docstruct.Document) []Chunk {
	c.top = 7
	c.source = d.PageSource
	for _, b := range d.Blocks {
		if b.Kind == docstruct.Heading {
			c.top = min(c.top, b.Level)
		}
	}
	for _, b := range d.Blocks {
		switch b.Kind {
		case docstruct.Section:
			c.flush()
			c.prevChunk = nil
			c.path = nil
			continue
		case docstruct.Heading:
			if b.Level <= c.top && !c.o.CrossSections {
				c.flush()
				c.prevChunk = nil
			} else if c.hasContent() && !c.o.MergeSmall {
				c.flush()
			}
			for len(c.path) > 0 && c.path[len(c.path)-1].Level >= b.Level {
				c.path = c.path[:len(c.path)-1]
			}
			c.path = append(c.path, *b)
		}
		for _, p := range c.pieces(b) {
			c.add(p)
		}
	}
	c.flush()
	for i := range c.out {
		c.out[i].Index = i
	}
	if c.out == nil {
		c.out = []Chunk{}
	}
	return c.out
}

func (c *chunker) pathTexts() []string {
	out := make([]string, len(c.path))
	for i, h := range c.path {
		out[i] = h.Text
	}
	return out
}

func (c *chunker) hasContent() bool {
	for _, p := range c.cur {
		if !p.heading {
			return true
		}
	}
	return false
}

// add puts a piece in the current chunk, or starts the next chunk with it.
func (c *chunker) add(p piece) {
	if len(c.cur) > 0 {
		sep := c.sep(c.cur[len(c.cur)-1], p)
		n := c.curTokens + c.tok.count(sep) + p.tokens
		chars := c.curChars + len(sep) + p.chars
		fits := n <= c.budget(commonPath(c.cur)) && chars <= c.o.ChunkSize
		if fits && n > c.budget(commonPath(c.cur))-8 {
			// Near the bound, the sum of the parts is checked against the whole.
			fits = c.tok.count(c.text(append(slices.Clone(c.cur), p))) <= c.budget(commonPath(append(c.cur, p)))
		}
		if !fits {
			// Headings at the end go on with what they head.
			var carry []piece
			for len(c.cur) > 0 && c.cur[len(c.cur)-1].heading && c.hasContent() {
				carry = append([]piece{c.cur[len(c.cur)-1]}, carry...)
				c.cur = c.cur[:len(c.cur)-1]
			}
			c.recount()
			c.flush()
			for _, h := range carry {
				c.add(h)
			}
			c.add(p)
			return
		}
	}
	if len(c.cur) > 0 {
		sep := c.sep(c.cur[len(c.cur)-1], p)
		c.curTokens += c.tok.count(sep)
		c.curChars += len(sep)
	}
	c.cur = append(c.cur, p)
	c.curTokens += p.tokens
	c.curChars += p.chars
}

func (c *chunker) sep(prev, next piece) string {
	if prev.block == next.block && prev.block.Kind != docstruct.Table {
		return " "
	}
	if prev.block == next.block {
		return "\n"
	}
	return docstruct.Separator(prev.block, next.block)
}

func (c *chunker) text(ps []piece) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(c.sep(ps[i-1], p))
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// commonPath is the heading path every piece falls under.
func commonPath(ps []piece) []string {
	if len(ps) == 0 {
		return nil
	}
	out := ps[0].path
	for _, p := range ps[1:] {
		n := 0
		for n < len(out) && n < len(p.path) && out[n] == p.path[n] {
			n++
		}
		out = out[:n]
	}
	return out
}

func (c *chunker) recount() {
	c.curTokens, c.curChars = 0, 0
	for i, p := range c.cur {
		if i > 0 {
			sep := c.sep(c.cur[i-1], p)
			c.curTokens += c.tok.count(sep)
			c.curChars += len(sep)
		}
		c.curTokens += p.tokens
		c.curChars += p.chars
	}
}

// flush ends the current chunk: with the overlap of the chunk before when it
// carries on the same text, within max_tokens however the parts add up.
func (c *chunker) flush() {
	if len(c.cur) == 0 {
		return
	}
	ps := c.cur
	c.cur, c.curTokens, c.curChars = nil, 0, 0
	path := commonPath(ps)
	own := c.text(ps)
	embedOf := func(text string) string {
		if c.o.Contextualize && len(path) > 0 {
			return contextPrefix(path) + text
		}
		return ""
	}
	count := func(text string) int {
		if e := embedOf(text); e != "" {
			return c.tok.count(e)
		}
		return c.tok.count(text)
	}
	text, n := own, count(own)
	if c.o.OverlapTokens > 0 && c.prevChunk != nil && !ps[0].heading && ps[0].block.Kind != docstruct.Table &&
		c.prevChunk.block.Kind != docstruct.Table {
		if ov := c.overlap(c.prevChunk.text); ov != "" {
			sep := "\n\n"
			if c.prevChunk.block == ps[0].block {
				sep = " "
			}
			cand := ov + sep + own
			if cn := count(cand); cn <= c.o.MaxTokens && utf8.RuneCountInString(cand) <= c.o.ChunkSize {
				text, n = cand, cn
			}
		}
	}
	if n > c.o.MaxTokens && len(ps) > 1 {
		// The parts added up to less than the whole: the last piece goes on.
		last := ps[len(ps)-1]
		c.cur = ps[:len(ps)-1]
		c.recount()
		c.flush()
		c.add(last)
		return
	}
	embed := embedOf(text)
	last := ps[len(ps)-1]
	c.prevChunk = &last
	var boxes []docstruct.Box
	var hinted []int
	var elements []string
	for i, p := range ps {
		boxes = append(boxes, p.boxes...)
		hinted = append(hinted, p.pages...)
		kind := p.block.Kind.String()
		same := i > 0 && (ps[i-1].block == p.block || kind == "list" && ps[i-1].block.Kind == docstruct.ListItem)
		if !same {
			elements = append(elements, kind)
		}
	}
	boxes = docstruct.MergeBoxes(boxes)
	if boxes == nil {
		boxes = []docstruct.Box{}
	}
	pages := append(docstruct.Pages(boxes), hinted...)
	slices.Sort(pages)
	pages = slices.Compact(pages)
	if pages == nil {
		pages = []int{}
	}
	source := ""
	if len(pages) > 0 {
		source = c.source
	}
	c.out = append(c.out, Chunk{Text: text, EmbedText: embed, Characters: utf8.RuneCountInString(text), Tokens: n,
		Pages: pages, PageSource: source, Boxes: boxes, HeadingPath: append([]string{}, path...), Elements: elements})
}

// overlap is the end of text, whole words, of at most overlap_tokens tokens.
func (c *chunker) overlap(text string) string {
	words := strings.Fields(text)
	lo := len(words)
	for lo > 0 {
		cand := strings.Join(words[lo-1:], " ")
		if c.tok.count(cand) > c.o.OverlapTokens || strings.ContainsAny(cand, "|#") {
			break
		}
		lo--
	}
	return strings.Join(words[lo:], " ")
}

// pieces is a block's markdown, cut to fit a chunk when it does not.
func (c *chunker) pieces(b *docstruct.Block) []piece {
	path := c.pathTexts()
	budget := c.budget(path)
	mk := func(text string, boxes []docstruct.Box, pages []int) piece {
		return piece{block: b, text: text, tokens: c.tok.count(text), chars: utf8.RuneCountInString(text), boxes: boxes,
			pages: pages, path: path, heading: b.Kind == docstruct.Heading}
	}
	if b.Kind != docstruct.Table {
		md := docstruct.BlockMarkdown(b)
		p := mk(md, b.Boxes, b.Pages)
		if p.tokens <= budget && p.chars <= c.o.ChunkSize {
			return []piece{p}
		}
		var out []piece
		for _, s := range c.split(md, budget) {
			out = append(out, mk(s, b.Boxes, b.Pages))
		}
		return out
	}
	if len(b.Rows) == 0 {
		return nil
	}
	rowBoxes := func(i int) []docstruct.Box {
		if i < len(b.RowBoxes) {
			return b.RowBoxes[i]
		}
		return nil
	}
	rowPages := func(i int) []int {
		if i < len(b.RowPages) {
			return b.RowPages[i]
		}
		return nil
	}
	whole := mk(docstruct.PipeTable(b.Rows), b.Boxes, b.Pages)
	if whole.tokens <= budget && whole.chars <= c.o.ChunkSize {
		return []piece{whole}
	}
	head := docstruct.RowMarkdown(b.Rows[0]) + "\n" + docstruct.SeparatorRow(len(b.Rows[0]))
	headTokens, headChars := c.tok.count(head), utf8.RuneCountInString(head)
	var out []piece
	var rows []string
	var boxes []docstruct.Box
	var pages []int
	tokens, chars := 0, 0
	emit := func() {
		if len(rows) == 0 {
			return
		}
		text := head + "\n" + strings.Join(rows, "\n")
		out = append(out, mk(text, append(slices.Clone(rowBoxes(0)), boxes...), append(slices.Clone(rowPages(0)), pages...)))
		rows, boxes, pages, tokens, chars = nil, nil, nil, 0, 0
	}
	for i, r := range b.Rows[1:] {
		row := docstruct.RowMarkdown(r)
		rt, rc := c.tok.count(row)+1, utf8.RuneCountInString(row)+1
		if len(rows) > 0 && (headTokens+tokens+rt > budget || headChars+chars+rc > c.o.ChunkSize) {
			emit()
		}
		if headTokens+rt > budget || headChars+rc > c.o.ChunkSize {
			// A row too long for a chunk even alone cannot stay whole: its words are cut.
			for _, s := range c.split(row, budget) {
				out = append(out, mk(s, rowBoxes(i+1), rowPages(i+1)))
			}
			continue
		}
		rows = append(rows, row)
		boxes = append(boxes, rowBoxes(i+1)...)
		pages = append(pages, rowPages(i+1)...)
		tokens += rt
		chars += rc
	}
	emit()
	return out
}

// split cuts text into parts within budget tokens and chunk_size characters: at
// sentence ends, else at spaces, else anywhere.
func (c *chunker) split(s string, budget int) []string {
	fits := func(t string) bool {
		return utf8.RuneCountInString(t) <= c.o.ChunkSize && c.tok.count(t) <= budget
	}
	var out []string
	cur := ""
	push := func(unit string) {
		if cur == "" {
			cur = unit
			return
		}
		if fits(cur + " " + unit) {
			cur += " " + unit
			return
		}
		out = append(out, cur)
		cur = unit
	}
	for _, sent := range sentences(s) {
		if fits(sent) {
			push(sent)
			continue
		}
		for _, w := range strings.Fields(sent) {
			for !fits(w) {
				// A word longer than a chunk: as many characters as fit.
				r := []rune(w)
				lo, hi := 1, len(r)
				for lo < hi {
					mid := (lo + hi + 1) / 2
					if fits(string(r[:mid])) {
						lo = mid
					} else {
						hi = mid - 1
					}
				}
				if cur != "" {
					out = append(out, cur)
					cur = ""
				}
				out = append(out, string(r[:lo]))
				w = string(r[lo:])
			}
			push(w)
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// sentences splits text after ". ", "! ", "? " and "; ".
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?' || s[i] == ';') && s[i+1] == ' ' {
			out = append(out, s[start:i+1])
			start = i + 2
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
