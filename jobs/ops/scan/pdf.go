package scan

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The PDF rules read the file's names the way a PDF reader would, undoing #xx escapes
// (/J#61vaScript is /JavaScript), and also inside compressed object streams, where a
// document can hide its dictionaries from a plain byte search. They never build the
// object graph: hostile files break parsers; names cannot hide.

// pdfNames are the names the rules count.
var pdfNames = map[string]bool{
	"JavaScript": true, "JS": true, "Launch": true, "OpenAction": true, "AA": true, "EmbeddedFile": true,
	"EmbeddedFiles": true, "ObjStm": true, "URI": true, "SubmitForm": true, "ImportData": true, "GoToR": true,
	"GoToE": true, "Filespec": true, "RichMedia": true,
}

// Actions that reach outside the document or run code.
var riskyActions = map[string]bool{
	"JavaScript": true, "Launch": true, "URI": true, "SubmitForm": true, "ImportData": true, "GoToR": true,
	"GoToE": true, "Rendition": true, "RichMediaExecute": true,
}

// Names of embedded files that run when opened.
var runnableExtensions = map[string]bool{
	"exe": true, "scr": true, "bat": true, "cmd": true, "com": true, "pif": true, "js": true, "jse": true,
	"vbs": true, "vbe": true, "wsf": true, "wsh": true, "hta": true, "ps1": true, "msi": true, "jar": true,
	"lnk": true, "dll": true, "cpl": true, "reg": true, "sh": true, "app": true, "elf": true, "apk": true,
}

type pdfScan struct {
	s           *inspector
	what        string
	top         []byte // the whole file, for resolving references
	count       map[string]int
	openActions [][]byte // what follows each /OpenAction
	filenames   map[string]bool
	streams     int // streams opened
	iter        int
}

// A document has one open action and a handful of object streams and embedded
// files; a hostile one repeating them is not read further than these.
const (
	maxOpenActions = 16
	maxPDFStreams  = 4096
)

func (s *inspector) inspectPDF(data []byte, what string) {
	p := &pdfScan{s: s, what: what, top: data, count: map[string]int{}, filenames: map[string]bool{}}
	p.scan(data, true)
	p.report()
}

func isDelimiter(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ', '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// readName reads the name starting at data[i] (after its slash): its decoded text and
// where it ends.
func readName(data []byte, i int) (string, int) {
	j := i
	for j < len(data) && j-i < 256 && !isDelimiter(data[j]) {
		j++
	}
	raw := data[i:j]
	if bytes.IndexByte(raw, '#') < 0 {
		return string(raw), j
	}
	var b strings.Builder
	for k := 0; k < len(raw); k++ {
		if raw[k] == '#' && k+2 < len(raw) {
			if v, err := strconv.ParseUint(string(raw[k+1:k+3]), 16, 8); err == nil {
				b.WriteByte(byte(v))
				k += 2
				continue
			}
		}
		b.WriteByte(raw[k])
	}
	return b.String(), j
}

// scan counts the names of data; in the file itself (top) it also opens object
// streams and embedded files.
func (p *pdfScan) scan(data []byte, top bool) {
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '/')
		if j < 0 {
			return
		}
		name, end := readName(data, i+j+1)
		i = max(end, i+j+1)
		if !pdfNames[name] {
			continue
		}
		if p.iter++; p.iter%4096 == 0 && p.s.ctx.Err() != nil {
			return
		}
		p.count[name]++
		switch name {
		case "OpenAction":
			if len(p.openActions) < maxOpenActions {
				p.openActions = append(p.openActions, data[end:min(end+1024, len(data))])
			}
		case "ObjStm":
			if top && p.streams < maxPDFStreams {
				p.streams++
				if inner := p.stream(data, end, p.s.cfg.MaxEntryBytes); inner != nil {
					p.scan(inner, false)
				}
			}
		case "EmbeddedFile":
			if top && p.streams < maxPDFStreams {
				p.streams++
				if head := p.stream(data, end, headBytes); head != nil {
					p.embeddedContent(head)
				}
			}
			p.embeddedNames(data[end:min(end+2048, len(data))])
		case "Filespec", "EmbeddedFiles":
			p.embeddedNames(data[end:min(end+2048, len(data))])
		}
	}
}

// stream returns up to limit decoded bytes of the stream whose dictionary holds
// data[at]: raw, or inflated when FlateDecode; nil for other filters.
func (p *pdfScan) stream(data []byte, at int, limit int64) []byte {
	win := data[at:min(at+4096, len(data))]
	k := bytes.Index(win, []byte("stream"))
	if k < 0 {
		return nil
	}
	dict := data[max(0, at-1024) : at+k]
	if i := bytes.LastIndex(dict, []byte("obj")); i >= 0 {
		dict = dict[i:]
	}
	start := at + k + len("stream")
	if start < len(data) && data[start] == '\r' {
		start++
	}
	if start < len(data) && data[start] == '\n' {
		start++
	}
	flate := bytes.Contains(dict, []byte("FlateDecode")) || bytes.Contains(dict, []byte("/Fl "))
	if !flate {
		if bytes.Contains(dict, []byte("/Filter")) {
			return nil
		}
		return data[start:min(len(data), start+int(limit))]
	}
	zr, err := zlib.NewReader(bytes.NewReader(data[start:]))
	if err != nil {
		return nil
	}
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.LimitReader(&budgetReader{s: p.s, r: zr}, limit))
	if errors.Is(err, errBudget) {
		p.s.partial(fmt.Sprintf("%d MiB decompressed", p.s.cfg.MaxInspectBytes>>20))
	}
	// A truncated stream still shows what it holds.
	return buf.Bytes()
}

// embeddedContent checks the start of an embedded file.
func (p *pdfScan) embeddedContent(head []byte) {
	if kind := executableKind(head); kind != "" {
		p.s.add("pdf.embedded_executable", SeverityHigh, fmt.Sprintf("%s embeds a %s executable", p.what, kind))
	}
	if isEICAR(head) {
		p.s.add("eicar", SeverityHigh, fmt.Sprintf("%s embeds the EICAR anti-virus test file", p.what))
	}
}

// embeddedNames reads the /F and /UF file names near a file specification.
func (p *pdfScan) embeddedNames(win []byte) {
	for _, key := range []string{"/UF", "/F"} {
		for off := 0; ; {
			i := bytes.Index(win[off:], []byte(key))
			if i < 0 {
				break
			}
			off += i + len(key)
			rest := bytes.TrimLeft(win[off:], " \t\r\n")
			if len(rest) == 0 || rest[0] != '(' {
				continue
			}
			name := pdfString(rest[1:])
			if name == "" || p.filenames[name] {
				continue
			}
			p.filenames[name] = true
			if runnableExtensions[extension(name)] {
				p.s.add("pdf.embedded_executable", SeverityHigh, fmt.Sprintf("%s embeds a file named %q", p.what, name))
			}
		}
	}
}

// pdfString reads a literal string's text up to its closing parenthesis (escapes and
// UTF-16 with a byte order mark decoded; bounded).
func pdfString(b []byte) string {
	var out []byte
	depth := 0
	for i := 0; i < len(b) && len(out) < 512; i++ {
		c := b[i]
		switch {
		case c == '\\' && i+1 < len(b):
			i++
			out = append(out, b[i])
		case c == '(':
			depth++
			out = append(out, c)
		case c == ')':
			if depth == 0 {
				return decodePDFText(out)
			}
			depth--
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return decodePDFText(out)
}

func decodePDFText(b []byte) string {
	if len(b) >= 2 && b[0] == 0xfe && b[1] == 0xff {
		u := make([]uint16, 0, len(b)/2)
		for i := 2; i+1 < len(b); i += 2 {
			u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
		}
		return string(utf16.Decode(u))
	}
	return string(b)
}

// report turns the counts into findings.
func (p *pdfScan) report() {
	c := p.count
	w := p.what
	if c["JavaScript"]+c["JS"] > 0 {
		p.s.add("pdf.javascript", SeverityMedium, fmt.Sprintf("%s contains JavaScript", w))
	}
	if c["Launch"] > 0 {
		p.s.add("pdf.launch", SeverityHigh, fmt.Sprintf("%s has a Launch action, which starts a program", w))
	}
	if c["EmbeddedFile"]+c["EmbeddedFiles"] > 0 {
		p.s.add("pdf.embedded_file", SeverityLow, fmt.Sprintf("%s has embedded files", w))
	}
	risky := c["JS"] > 0
	for a := range riskyActions {
		risky = risky || c[a] > 0
	}
	for _, oa := range p.openActions {
		switch action, known := p.openAction(oa); {
		case known && riskyActions[action]:
			p.s.add("pdf.open_action", SeverityMedium, fmt.Sprintf("%s runs a %s action when opened", w, action))
		case !known && risky:
			p.s.add("pdf.open_action", SeverityMedium, fmt.Sprintf("%s runs an action when opened", w))
		}
	}
	if c["AA"] > 0 && (c["JavaScript"]+c["JS"]+c["Launch"] > 0) {
		p.s.add("pdf.open_action", SeverityMedium, fmt.Sprintf("%s runs actions on page or field events", w))
	}
}

// openAction names the action an /OpenAction value starts: known is false when it
// cannot be told (a reference into a compressed object stream). A destination
// (an array) is a plain GoTo.
func (p *pdfScan) openAction(v []byte) (action string, known bool) {
	v = bytes.TrimLeft(v, " \t\r\n\f\x00")
	switch {
	case len(v) == 0:
		return "", false
	case v[0] == '[':
		return "GoTo", true
	case bytes.HasPrefix(v, []byte("<<")):
		return actionType(v)
	}
	// An indirect reference: "N G R".
	f := strings.Fields(string(v[:min(len(v), 40)]))
	if len(f) < 3 || !strings.HasPrefix(f[2], "R") {
		return "", false
	}
	num, err1 := strconv.Atoi(f[0])
	gen, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return "", false
	}
	obj := findObject(p.top, num, gen)
	if obj == nil {
		return "", false
	}
	obj = bytes.TrimLeft(obj, " \t\r\n\f\x00")
	if len(obj) > 0 && obj[0] == '[' {
		return "GoTo", true
	}
	return actionType(obj)
}

// actionType reads the /S of an action dictionary.
func actionType(dict []byte) (string, bool) {
	dict = dict[:min(len(dict), 2048)]
	if end := bytes.Index(dict, []byte("endobj")); end >= 0 {
		dict = dict[:end]
	}
	prevS := false
	for i := 0; i < len(dict); {
		j := bytes.IndexByte(dict[i:], '/')
		if j < 0 {
			break
		}
		name, end := readName(dict, i+j+1)
		i = max(end, i+j+1)
		if prevS {
			return name, true
		}
		prevS = name == "S"
	}
	return "", false
}

// findObject returns the text after "num gen obj" in data, or nil.
func findObject(data []byte, num, gen int) []byte {
	key := []byte(fmt.Sprintf("%d %d obj", num, gen))
	for off := 0; ; {
		i := bytes.Index(data[off:], key)
		if i < 0 {
			return nil
		}
		at := off + i
		if at == 0 || data[at-1] < '0' || data[at-1] > '9' {
			end := at + len(key)
			return data[end:min(len(data), end+2048)]
		}
		off = at + len(key)
	}
}
