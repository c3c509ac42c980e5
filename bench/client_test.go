package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// call sends one API request with the stack's key and decodes the answer.
func (s *stack) call(ctx context.Context, client *http.Client, method, path string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	if method == "POST" {
		k := make([]byte, 12)
		_, _ = rand.Read(k)
		req.Header.Set("Idempotency-Key", hex.EncodeToString(k))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, nil
}

// readyFile uploads content through the real flow and returns the file id.
func (s *stack) readyFile(tb testing.TB, name string, content []byte) string {
	tb.Helper()
	ctx := context.Background()
	c := http.DefaultClient
	st, up, err := s.call(ctx, c, "POST", "/v1/uploads", map[string]any{"filename": name, "byte_size": len(content)})
	if err != nil || st != 201 {
		tb.Fatalf("open upload: %d %v %v", st, up, err)
	}
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), bytes.NewReader(content))
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		tb.Fatalf("put: %v %v", resp, err)
	}
	resp.Body.Close()
	st, f, err := s.call(ctx, c, "POST", "/v1/files/"+up["file_id"].(string)+"/complete", nil)
	if err != nil || st != 200 {
		tb.Fatalf("complete: %d %v %v", st, f, err)
	}
	return fmt.Sprint(f["id"])
}
