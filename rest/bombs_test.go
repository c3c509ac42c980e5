package rest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
)

// TestJSONBombsRefused sends request bodies built to make a JSON decoder work hard, each
// up to the 1 MiB body cap: each is refused with its code and a short answer, within the
// time and memory stated (the client's copy of the body included). Not parallel: the
// figures are this test's.
func TestJSONBombsRefused(t *testing.T) {
	b := setup(t)
	const half = 500_000
	for _, c := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"DeepArrays", "/v1/uploads", `{"filename":"a","byte_size":1,"validation":{"formats":` + strings.Repeat("[", half) + strings.Repeat("]", half) + `}}`,
			400, domain.CodeInvalidRequest},
		{"DeepObjectsInOptions", "/v1/jobs", `{"file_id":"file_01ARZ3NDEKTSV4RRFFQ69G5FAV","operation":"inspect","options":` +
			strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + "}", 400, domain.CodeInvalidRequest},
		{"LongUnknownKey", "/v1/uploads", `{"filename":"a","byte_size":1,"` + strings.Repeat("k", 1_000_000) + `":1}`, 400, domain.CodeInvalidRequest},
		{"HugeNumber", "/v1/uploads", `{"filename":"a","byte_size":1` + strings.Repeat("7", 1_000_000) + "}", 400, domain.CodeInvalidRequest},
		{"HugeExponent", "/v1/uploads", `{"filename":"a","byte_size":1e999999999}`, 400, domain.CodeInvalidRequest},
		{"HugeFraction", "/v1/downloads", `{"expires_in":0.` + strings.Repeat("0", 1_000_000) + "1}", 400, domain.CodeInvalidRequest},
		{"EscapedNULs", "/v1/uploads", `{"byte_size":1,"filename":"` + strings.Repeat(`\u0000`, 170_000) + `"}`, 400, domain.CodeInvalidRequest},
		{"ManyArrayItems", "/v1/uploads", `{"filename":"a","byte_size":1,"validation":{"formats":[` + strings.Repeat(`"pdf",`, 170_000) + `"pdf"]}}`,
			400, domain.CodeInvalidRequest},
		{"OverTheCap", "/v1/uploads", `{"filename":"a","byte_size":1}` + strings.Repeat(" ", 1<<20), 413, domain.CodePayloadTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "/v1/downloads" {
				path = "/v1/files/file_01ARZ3NDEKTSV4RRFFQ69G5FAV/download-url"
			}
			var r response
			m := hostile.Run(func() { r = b.do(req{method: "POST", path: path, key: b.liveA, idem: idem(), body: c.body}) })
			require.Equal(t, c.status, r.status, "%.300s", r.body)
			require.Equal(t, c.code, r.errorCode(t))
			// The refusal quotes what it must, never the bomb itself.
			require.Less(t, len(r.body), 1<<10, "%.300s", r.body)
			m.Within(t, c.name+" ("+hostile.Size(len(c.body))+"): "+r.json(t)["error"].(map[string]any)["message"].(string),
				5*time.Second, 64<<20)
		})
	}
}
