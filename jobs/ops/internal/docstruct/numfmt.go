package docstruct

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// builtinFormats are the number formats a workbook names by id without writing them.
var builtinFormats = map[int]string{
	0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00", 9: "0%", 10: "0.00%", 11: "0.00E+00",
	12: "# ?/?", 13: "# ??/??", 14: "m/d/yyyy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM",
	19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "m/d/yyyy h:mm", 37: "#,##0 ;(#,##0)",
	38: "#,##0 ;(#,##0)", 39: "#,##0.00;(#,##0.00)", 40: "#,##0.00;(#,##0.00)", 45: "mm:ss", 46: "[h]:mm:ss",
	47: "mm:ss.0", 48: "##0.0E+0", 49: "@",
}

// FormatValue writes a number as a spreadsheet shows it under the format code: the
// common codes (decimals, thousands, percent, scientific, currency and other literal
// text, sections for negative numbers and zero, dates and times); anything else as
// General, up to ten significant digits.
func FormatValue(v float64, code string, date1904 bool) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	code = strings.TrimSpace(code)
	if code == "" || strings.EqualFold(code, "General") || code == "@" {
		return general(v)
	}
	sections := splitSections(code)
	sec := sections[0]
	neg := v < 0
	switch {
	case v < 0 && len(sections) > 1:
		sec, v, neg = sections[1], -v, false
	case v == 0 && len(sections) > 2:
		sec = sections[2]
	}
	toks := formatTokens(sec)
	if isDateFormat(toks) {
		return formatDate(v, toks, date1904)
	}
	s := formatNumberTokens(math.Abs(v), toks)
	if neg && strings.ContainsAny(s, "123456789") {
		s = "-" + s
	}
	return s
}

func general(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	a := math.Abs(v)
	if a >= 1e11 || a < 1e-9 {
		s := strconv.FormatFloat(v, 'E', 5, 64)
		mant, exp, _ := strings.Cut(s, "E")
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		return mant + "E" + exp
	}
	s := strconv.FormatFloat(v, 'g', 10, 64)
	if strings.Contains(s, "e") {
		s = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return s
}

func splitSections(code string) []string {
	var out []string
	var b strings.Builder
	inQ, inB := false, false
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case c == '"' && !inB:
			inQ = !inQ
		case c == '[' && !inQ:
			inB = true
		case c == ']' && !inQ:
			inB = false
		case c == '\\' && !inQ && i+1 < len(code):
			b.WriteByte(c)
			i++
			c = code[i]
		case c == ';' && !inQ && !inB:
			out = append(out, b.String())
			b.Reset()
			continue
		}
		b.WriteByte(c)
	}
	return append(out, b.String())
}

// fmtToken is a piece of a format section: literal text, or a run of one placeholder
// letter (0 # ? . , % E y m d h s and the AM/PM marker).
type fmtToken struct {
	lit  string
	code string
}

func formatTokens(sec string) []fmtToken {
	var out []fmtToken
	for i := 0; i < len(sec); i++ {
		c := sec[i]
		switch {
		case c == '"':
			j := strings.IndexByte(sec[i+1:], '"')
			if j < 0 {
				j = len(sec) - i - 1
			}
			out = append(out, fmtToken{lit: sec[i+1 : i+1+j]})
			i += j + 1
		case c == '\\' && i+1 < len(sec):
			_, n := decodeRune(sec[i+1:])
			out = append(out, fmtToken{lit: sec[i+1 : i+1+n]})
			i += n
		case c == '_' && i+1 < len(sec):
			out = append(out, fmtToken{lit: " "})
			i++
		case c == '*' && i+1 < len(sec):
			i++
		case c == '[':
			j := strings.IndexByte(sec[i:], ']')
			if j < 0 {
				return out
			}
			inner := sec[i+1 : i+j]
			switch {
			case strings.HasPrefix(inner, "$"):
				sym, _, _ := strings.Cut(inner[1:], "-")
				out = append(out, fmtToken{lit: sym})
			case strings.Trim(strings.ToLower(inner), "hms") == "":
				out = append(out, fmtToken{code: strings.ToLower(inner)})
			}
			i += j
		case strings.HasPrefix(strings.ToUpper(sec[i:]), "AM/PM"):
			out = append(out, fmtToken{code: "ampm"})
			i += 4
		case strings.HasPrefix(strings.ToUpper(sec[i:]), "A/P"):
			out = append(out, fmtToken{code: "ampm"})
			i += 2
		case strings.ContainsRune("0#?.,%", rune(c)):
			out = append(out, fmtToken{code: string(c)})
		case c == 'E' || c == 'e':
			if i+1 < len(sec) && (sec[i+1] == '+' || sec[i+1] == '-') {
				out = append(out, fmtToken{code: "E" + string(sec[i+1])})
				i++
			} else {
				out = append(out, fmtToken{code: strings.ToLower(string(c))})
			}
		case strings.ContainsRune("yYmMdDhHsS", rune(c)):
			j := i
			for j < len(sec) && strings.EqualFold(string(sec[j]), string(c)) {
				j++
			}
			out = append(out, fmtToken{code: strings.ToLower(sec[i:j])})
			i = j - 1
		default:
			_, n := decodeRune(sec[i:])
			out = append(out, fmtToken{lit: sec[i : i+n]})
			i += n - 1
		}
	}
	return out
}

func decodeRune(s string) (rune, int) {
	for i, r := range s {
		if i == 0 {
			n := len(string(r))
			return r, n
		}
	}
	return 0, 1
}

func isDateFormat(toks []fmtToken) bool {
	date := false
	for _, t := range toks {
		switch {
		case t.code == "" || t.code == "ampm":
		case t.code[0] == '0' || t.code[0] == '#' || t.code[0] == '?':
			return false
		case strings.ContainsRune("ymdhs", rune(t.code[0])) || t.code[0] == '[':
			date = true
		}
	}
	return date
}

// formatNumberTokens writes v (not negative) by a number section's placeholders.
func formatNumberTokens(v float64, toks []fmtToken) string {
	var (
		intDigits, decimals  int
		afterPoint, sep, sci bool
		percent              int
		first, last          = -1, -1
	)
	for i, t := range toks {
		switch t.code {
		case "0", "#", "?":
			if first < 0 {
				first = i
			}
			last = i
			switch {
			case sci:
				// The exponent's digits: written with two at least.
			case afterPoint:
				decimals++
			case t.code == "0":
				intDigits++
			}
		case ".":
			afterPoint = true
			if first < 0 {
				first = i
			}
			last = i
		case ",":
			if first >= 0 && !afterPoint {
				sep = true
			}
		case "%":
			percent++
		case "E+", "E-":
			sci = true
			afterPoint = true
			last = i
		}
	}
	if first < 0 {
		// No placeholder: the literal text alone (or General where there is none).
		var b strings.Builder
		for _, t := range toks {
			b.WriteString(t.lit)
		}
		if strings.TrimSpace(b.String()) == "" {
			return general(v)
		}
		return b.String()
	}
	for range percent {
		v *= 100
	}
	var num string
	if sci {
		s := strconv.FormatFloat(v, 'E', decimals, 64)
		mant, exp, _ := strings.Cut(s, "E")
		e, _ := strconv.Atoi(exp)
		es := strconv.Itoa(int(math.Abs(float64(e))))
		for len(es) < 2 {
			es = "0" + es
		}
		sign := "+"
		if e < 0 {
			sign = "-"
		}
		num = mant + "E" + sign + es
	} else {
		s := strconv.FormatFloat(v, 'f', decimals, 64)
		ip, fp, _ := strings.Cut(s, ".")
		ip = strings.TrimLeft(ip, "0")
		for len(ip) < intDigits {
			ip = "0" + ip
		}
		if sep {
			ip = groupThousands(ip)
		}
		num = ip
		if decimals > 0 {
			num += "." + fp
		}
		if num == "" {
			num = "0"
		}
	}
	var b strings.Builder
	for i, t := range toks {
		switch {
		case i == first:
			b.WriteString(num)
		case i > first && i <= last:
		case t.code == "%":
			b.WriteByte('%')
		default:
			b.WriteString(t.lit)
		}
	}
	return strings.TrimSpace(b.String())
}

func groupThousands(s string) string {
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// formatDate writes a date serial (days since the workbook's epoch, the fraction the
// time of day) by a date section's tokens.
func formatDate(v float64, toks []fmtToken, date1904 bool) string {
	epoch := time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	if date1904 {
		epoch = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if v < 0 || v > 2_958_465 {
		return general(v)
	}
	secs := math.Round(v * 86400)
	t := epoch.Add(time.Duration(secs) * time.Second)
	ampm := false
	for _, tk := range toks {
		ampm = ampm || tk.code == "ampm"
	}
	var b strings.Builder
	for i, tk := range toks {
		if tk.code == "" {
			b.WriteString(tk.lit)
			continue
		}
		c := tk.code
		switch c[0] {
		case 'y':
			if len(c) <= 2 {
				b.WriteString(pad2(t.Year() % 100))
			} else {
				b.WriteString(strconv.Itoa(t.Year()))
			}
		case 'm':
			if minuteContext(toks, i) {
				b.WriteString(padN(t.Minute(), len(c)))
				continue
			}
			switch len(c) {
			case 1:
				b.WriteString(strconv.Itoa(int(t.Month())))
			case 2:
				b.WriteString(pad2(int(t.Month())))
			case 3:
				b.WriteString(monthNames[t.Month()-1][:3])
			case 5:
				b.WriteString(monthNames[t.Month()-1][:1])
			default:
				b.WriteString(monthNames[t.Month()-1])
			}
		case 'd':
			switch len(c) {
			case 1:
				b.WriteString(strconv.Itoa(t.Day()))
			case 2:
				b.WriteString(pad2(t.Day()))
			case 3:
				b.WriteString(t.Weekday().String()[:3])
			default:
				b.WriteString(t.Weekday().String())
			}
		case 'h':
			h := t.Hour()
			if ampm {
				h = h % 12
				if h == 0 {
					h = 12
				}
			}
			b.WriteString(padN(h, len(c)))
		case 's':
			b.WriteString(padN(t.Second(), len(c)))
		case '[':
		default:
			switch c {
			case "h", "hh", "[h]":
				b.WriteString(strconv.Itoa(int(secs / 3600)))
			case "ampm":
				if t.Hour() < 12 {
					b.WriteString("AM")
				} else {
					b.WriteString("PM")
				}
			case ".", "0":
				// Fractions of a second: whole seconds are shown.
			default:
				if strings.HasPrefix(c, "h") {
					b.WriteString(strconv.Itoa(int(secs / 3600)))
				} else if strings.HasPrefix(c, "m") {
					b.WriteString(strconv.Itoa(int(secs / 60)))
				}
			}
		}
	}
	return b.String()
}

// minuteContext: "m" right after an hour or right before a second is minutes.
func minuteContext(toks []fmtToken, i int) bool {
	for j := i - 1; j >= 0; j-- {
		if toks[j].code == "" {
			continue
		}
		if toks[j].code[0] == 'h' || strings.HasPrefix(toks[j].code, "[h") {
			return true
		}
		break
	}
	for j := i + 1; j < len(toks); j++ {
		if toks[j].code == "" {
			continue
		}
		return toks[j].code[0] == 's'
	}
	return false
}

func pad2(n int) string { return padN(n, 2) }

func padN(n, w int) string {
	s := strconv.Itoa(n)
	for len(s) < w {
		s = "0" + s
	}
	return s
}
