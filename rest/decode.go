package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
)

// maxBodyBytes bounds every JSON request body; file bytes never come through the API.
const maxBodyBytes = 1 << 20

// readBody reads the request body under the size bound. Codes: payload_too_large.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, domain.Errorf(domain.CodeInvalidRequest, "could not read the request body")
	}
	if len(b) > maxBodyBytes {
		return nil, domain.Errorf(domain.CodePayloadTooLarge, "request bodies are limited to %d bytes", maxBodyBytes)
	}
	return b, nil
}

// checkContentType refuses a body sent as anything but JSON. An empty body needs no
// type. Codes: invalid_request (param Content-Type).
func checkContentType(r *http.Request, body []byte) error {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return domain.InvalidParam("Content-Type", "request bodies are JSON: send them with Content-Type: application/json")
	}
	return nil
}

// decodeStrict decodes a JSON object into v, refusing unknown fields (also in another
// case), duplicate keys, nesting deeper than maxJSONDepth, text that is not UTF-8, wrong
// types and trailing data, and naming the offending field in param. An empty body
// decodes as {} when optional is true.
func decodeStrict(body []byte, v any, optional bool) error {
	body = bytes.Trim(body, jsonSpace)
	if len(body) == 0 {
		if optional {
			return nil
		}
		return domain.Errorf(domain.CodeInvalidRequest, "a JSON body is required")
	}
	if body[0] != '{' {
		return domain.Errorf(domain.CodeInvalidRequest, "the body must be a JSON object")
	}
	if err := checkJSON(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return domain.Errorf(domain.CodeInvalidRequest, "unexpected data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return domain.Errorf(domain.CodeInvalidRequest, "unexpected data after the JSON object")
	}
	return nil
}

// jsonSpace is the white space JSON allows around a value (RFC 8259): not the other
// characters bytes.TrimSpace would take away, which no JSON parser reads as space.
const jsonSpace = " \t\r\n"

// maxJSONDepth bounds how deep objects and arrays of a request body may nest; no body of
// the contract needs more, and a deeper one is refused before it is decoded.
const maxJSONDepth = 10

// checkJSON walks the tokens of body once, before it is decoded into a value of type t,
// for what encoding/json lets pass: a key given twice in one object (it keeps the last),
// a field name in another case (it matches case-insensitively), text that is not UTF-8
// (it substitutes U+FFFD), and unbounded nesting. Params are dotted paths.
func checkJSON(body []byte, t reflect.Type) error {
	w := &jsonWalker{dec: json.NewDecoder(bytes.NewReader(body)), body: body}
	w.dec.UseNumber()
	return w.value("", t, 0)
}

type jsonWalker struct {
	dec  *json.Decoder
	body []byte
	last int64 // input offset after the previous token
}

// token reads one token and the raw bytes it came from (with the separators before it).
func (w *jsonWalker) token() (json.Token, []byte, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, nil, jsonError(err)
	}
	end := w.dec.InputOffset()
	raw := w.body[w.last:end]
	w.last = end
	return tok, raw, nil
}

// checkText refuses a string token whose raw form is not UTF-8 or held an escape that is
// no character (a lone surrogate): both decode as U+FFFD.
func checkText(param, s string, raw []byte) error {
	bad := !utf8.Valid(raw)
	if !bad && strings.ContainsRune(s, utf8.RuneError) {
		bad = !bytes.ContainsRune(raw, utf8.RuneError) && !bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`))
	}
	if bad {
		if param == "" {
			return domain.Errorf(domain.CodeInvalidRequest, "the body must be valid UTF-8")
		}
		return domain.InvalidParam(param, "%s must be valid UTF-8 text", param)
	}
	return nil
}

func (w *jsonWalker) value(path string, t reflect.Type, depth int) error {
	tok, raw, err := w.token()
	if err != nil {
		return err
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch tok := tok.(type) {
	case string:
		return checkText(path, tok, raw)
	case json.Delim:
		if depth+1 > maxJSONDepth {
			return domain.InvalidParam(path, "the body nests objects and arrays more than %d deep", maxJSONDepth)
		}
		if tok == '[' {
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessageType {
				elem = t.Elem()
			}
			for i := 0; w.dec.More(); i++ {
				if err := w.value(fmt.Sprintf("%s[%d]", path, i), elem, depth+1); err != nil {
					return err
				}
			}
			_, _, err := w.token() // ]
			return err
		}
		seen := map[string]bool{}
		for w.dec.More() {
			ktok, raw, err := w.token()
			if err != nil {
				return err
			}
			key, _ := ktok.(string)
			// The key as a param: clipped, and readable whatever bytes it held.
			param := domain.Clip(strings.ToValidUTF8(key, "\uFFFD"), domain.MaxQuotedChars)
			if path != "" {
				param = path + "." + param
			}
			if err := checkText(param, key, raw); err != nil {
				return err
			}
			if seen[key] {
				return domain.InvalidParam(param, "%q is given twice", param)
			}
			seen[key] = true
			var ft reflect.Type
			if t != nil && t.Kind() == reflect.Struct {
				f, ok := jsonField(t, key)
				if !ok {
					return domain.InvalidParam(param, "unknown field %q", param)
				}
				ft = f
			}
			if err := w.value(param, ft, depth+1); err != nil {
				return err
			}
		}
		_, _, err := w.token() // }
		return err
	}
	return nil
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// jsonField returns the type of the field of struct t named exactly key in JSON; a name
// that matches only in another case is no field.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			if f.Type == rawMessageType {
				return nil, true // free-form: its own keys are the operation's to judge
			}
			return f.Type, true
		}
	}
	return nil, false
}

func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return domain.InvalidParam(typeErr.Field, "%s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()),
			domain.Clip(typeErr.Value, domain.MaxQuotedChars))
	case errors.As(err, &syntaxErr):
		return domain.Errorf(domain.CodeInvalidRequest, "malformed JSON at byte %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		name = domain.Clip(name, domain.MaxQuotedChars)
		return domain.InvalidParam(name, "unknown field %q", name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Errorf(domain.CodeInvalidRequest, "truncated JSON body")
	}
	var derr *domain.Error
	if errors.As(err, &derr) {
		return derr
	}
	return domain.Errorf(domain.CodeInvalidRequest, "invalid JSON body: %s", domain.Clip(err.Error(), domain.MaxQuotedChars))
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32":
		return "an integer"
	case "float64":
		return "a number"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}

// queryInt parses an integer query parameter. Codes: invalid_request.
func queryInt(r *http.Request, name string) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, domain.InvalidParam(name, "%s must be an integer", name)
	}
	if n == 0 {
		// 0 is out of range, not "use the default".
		return 0, domain.InvalidParam(name, "%s must be between 1 and %d", name, domain.MaxPageSize)
	}
	return n, nil
}

// pageFrom reads limit and starting_after. Codes: invalid_request.
func pageFrom(r *http.Request) (domain.Page, error) {
	limit, err := queryInt(r, "limit")
	if err != nil {
		return domain.Page{}, err
	}
	return domain.Page{Limit: limit, StartingAfter: r.URL.Query().Get("starting_after")}, nil
}

// listBody is the list envelope.
type listBody[T any] struct {
	Object     string  `json:"object"`
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func newList[E any, V any](l domain.List[E], view func(E) V, id func(E) string) listBody[V] {
	out := listBody[V]{Object: "list", Data: make([]V, 0, len(l.Data)), HasMore: l.HasMore}
	for _, e := range l.Data {
		out.Data = append(out.Data, view(e))
	}
	if c := domain.NextCursor(l, id); c != "" {
		out.NextCursor = &c
	}
	return out
}
