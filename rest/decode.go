package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

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

// decodeStrict decodes a JSON object into v, refusing unknown fields, wrong types and
// trailing data, and naming the offending field in param. An empty body decodes as {}
// when optional is true.
func decodeStrict(body []byte, v any, optional bool) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		if optional {
			return nil
		}
		return domain.Errorf(domain.CodeInvalidRequest, "a JSON body is required")
	}
	if body[0] != '{' {
		return domain.Errorf(domain.CodeInvalidRequest, "the body must be a JSON object")
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

func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return domain.InvalidParam(typeErr.Field, "%s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return domain.Errorf(domain.CodeInvalidRequest, "malformed JSON at byte %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return domain.InvalidParam(name, "unknown field %q", name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Errorf(domain.CodeInvalidRequest, "truncated JSON body")
	}
	var derr *domain.Error
	if errors.As(err, &derr) {
		return derr
	}
	return domain.Errorf(domain.CodeInvalidRequest, "invalid JSON body: %s", err.Error())
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
