package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rules for the strings clients give. Both doors call the services, so these are the
// rules of both: a string that cannot be stored (PostgreSQL refuses NUL and invalid
// UTF-8) or shown safely is refused with invalid_request naming it, never cut or
// altered silently.

// MaxFilenameChars is the longest filename, in characters (not bytes).
const MaxFilenameChars = 1024

// CheckText refuses a string that is not valid UTF-8, holds a control character, or has
// more than maxChars characters (0: no bound). Codes: invalid_request (param).
func CheckText(param, s string, maxChars int) error {
	if !utf8.ValidString(s) {
		return InvalidParam(param, "%s must be valid UTF-8", param)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return InvalidParam(param, "%s must not contain control characters (found %U)", param, []rune(s[i:])[0])
	}
	if maxChars > 0 && utf8.RuneCountInString(s) > maxChars {
		return InvalidParam(param, "%s must be at most %d characters", param, maxChars)
	}
	return nil
}

// MaxQuotedChars is how much of a client's value an error message quotes.
const MaxQuotedChars = 64

// Clip returns s cut to at most n characters, marked "…" where it was cut. Errors that
// quote what a client sent quote it clipped, so a hostile value (a key or a number of a
// megabyte) never makes an answer or a log line as large as itself.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// CheckFilename refuses a name that is not text (CheckText), is blank, or is "." or
// "..". Any other name is kept exactly as given; SafeName makes it safe where it is used
// as a file name. Codes: invalid_request (param filename).
func CheckFilename(name string) error {
	if err := CheckText("filename", name, MaxFilenameChars); err != nil {
		return err
	}
	switch strings.TrimSpace(name) {
	case "":
		return InvalidParam("filename", "filename must not be blank")
	case ".", "..":
		return InvalidParam("filename", "filename must name a file, not %q", name)
	}
	return nil
}

// CheckMediaType refuses a declared type that is not text or not a media type, or whose
// parameters (decoded, RFC 2231 included) hold control characters. Codes:
// invalid_request (param).
func CheckMediaType(param, s string) error {
	if err := CheckText(param, s, 255); err != nil {
		return err
	}
	mt, params, err := mime.ParseMediaType(s)
	if err != nil || !strings.Contains(mt, "/") {
		return InvalidParam(param, "%s is not a media type such as application/pdf", param)
	}
	for k, v := range params {
		if err := CheckText(param, v, 0); err != nil {
			return InvalidParam(param, "the %s parameter of %s: %s", k, param, strings.TrimPrefix(err.(*Error).Message, param+" "))
		}
	}
	return nil
}

// CheckJSONText refuses a JSON document holding a string that cannot be stored: invalid
// UTF-8, or a NUL (PostgreSQL's jsonb holds no \u0000). Codes: invalid_request (param).
func CheckJSONText(param string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if !utf8.Valid(raw) {
		return InvalidParam(param, "%s must be valid UTF-8", param)
	}
	// Only an escape can put a NUL in JSON text; a backslash escaped itself is no escape.
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if bytes.HasPrefix(raw[i:], []byte(`\u0000`)) {
			return InvalidParam(param, "%s must not contain NUL characters", param)
		}
		i++ // skip the escaped character
	}
	return nil
}

// SafeName is a stored filename made safe to use as a file name (a download's
// Content-Disposition, an engine's output names): the last path element, with control
// characters dropped; "file" when nothing usable remains.
func SafeName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	name = path.Base("/" + strings.ReplaceAll(name, `\`, "/"))
	if strings.TrimSpace(name) == "" || name == "/" || name == "." || name == ".." {
		return "file"
	}
	return name
}

// checkFormats refuses validation.formats entries that are not text or name no format
// detection can find. Codes: invalid_request (param validation.formats[i]).
func checkFormats(formats []string) error {
	for i, f := range formats {
		param := fmt.Sprintf("validation.formats[%d]", i)
		if err := CheckText(param, f, 255); err != nil {
			return err
		}
		if !KnownFormat(f) {
			return InvalidParam(param, "%q names no known format: give an extension (pdf), a media type (application/pdf) or a family (image/*)", f)
		}
	}
	return nil
}
