package rest

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
)

// bodies are the request bodies decodeStrict reads, one of each shape the handlers use.
var bodies = []func() any{
	func() any { return &domain.JobRequest{} },
	func() any { return &domain.BatchRequest{} },
	func() any { return &domain.UploadRequest{} },
	func() any { return &domain.NewWebhookEndpoint{} },
	func() any {
		return &struct {
			Parts []domain.PartRequest `json:"parts"`
		}{}
	},
	func() any {
		return &struct {
			ArtifactID string `json:"artifact_id"`
			ExpiresIn  *int   `json:"expires_in"`
		}{}
	},
	func() any { return &struct{}{} },
}

// jsonDepth is how deep objects and arrays nest in a valid JSON text, read outside its
// strings.
func jsonDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// FuzzDecodeStrict: a request body is refused with invalid_request and a short,
// readable message, or it is a JSON object within the nesting bound, UTF-8 throughout, that the
// standard decoder reads to the same value, and that decodes again to itself once
// encoded.
func FuzzDecodeStrict(f *testing.F) {
	for i, s := range []string{
		`{"file_id":"file_01ARZ3NDEKTSV4RRFFQ69G5FAV","operation":"image.convert","options":{"format":"webp","width":256}}`,
		`{"file_ids":["a","b"],"preset":"image","options":null}`,
		`{"filename":"a.pdf","byte_size":12,"validation":{"formats":["pdf"],"max_bytes":100,"scan":true}}`,
		`{"url":"https://example.com/h","enabled_events":["job.succeeded"]}`,
		`{"parts":[{"part_number":1,"etag":"\"abc\""}]}`,
		`{"artifact_id":"art_1","expires_in":3600}`,
		` `,
		`{"file_id":"a","file_id":"b"}`,
		`{"File_ID":"a"}`,
		`{"operation":"\ud800"}`,
		"{\"operation\":\"\xff\"}",
		`{"options":{"a":[[[[[[[[[[[1]]]]]]]]]]]}}`,
		`{"byte_size":1e400}`,
		`{"byte_size":-9223372036854775809}`,
		`{"expires_in":1.5}`,
		`{} {}`,
		`{"parts":[{"part_number":1}]}]`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		if len(body) > maxBodyBytes {
			return // readBody refuses it before decoding
		}
		newBody := bodies[int(kind)%len(bodies)]
		v := newBody()
		var err error
		alloc := hostile.Allocated(func() { err = decodeStrict(body, v, true) })
		if limit := uint64(hostile.Slack + 64*len(body)); alloc > limit {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(body), alloc)
		}
		if err != nil {
			de := domain.AsError(err)
			if de == nil || de.Code != domain.CodeInvalidRequest || de.Message == "" {
				t.Fatalf("refusal %#v is not invalid_request with a message", err)
			}
			if !utf8.ValidString(de.Message) || !utf8.ValidString(de.Param) {
				t.Fatalf("refusal not in UTF-8: %q (param %q)", de.Message, de.Param)
			}
			// Quoted values are clipped: the answer never grows with the body.
			if len(de.Message) > 1<<10 || len(de.Param) > 1<<10 {
				t.Fatalf("a refusal of %d bytes (param %d bytes)", len(de.Message), len(de.Param))
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
		if d := jsonDepth(body); d > maxJSONDepth {
			t.Fatalf("accepted a body nested %d deep", d)
		}
		std := newBody()
		if len(body) > 0 && !isBlank(body) {
			if err := json.Unmarshal(body, std); err != nil {
				t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
			}
			if !reflect.DeepEqual(canonicalJSON(t, v), canonicalJSON(t, std)) {
				t.Fatalf("read %q as %s, encoding/json as %s", body, canonicalJSON(t, v), canonicalJSON(t, std))
			}
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q, which does not encode: %v", body, err)
		}
		again := newBody()
		if err := decodeStrict(enc, again, false); err != nil {
			t.Fatalf("%q decoded from %q does not decode again: %v", enc, body, err)
		}
		if string(canonicalJSON(t, again)) != string(canonicalJSON(t, v)) {
			t.Fatalf("round trip changed %s into %s", canonicalJSON(t, v), canonicalJSON(t, again))
		}
	})
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// canonicalJSON encodes v with its raw messages compacted, so values that differ only
// in the spacing of their free-form options compare equal.
func canonicalJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
