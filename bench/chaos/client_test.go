//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filemill/filemill/graph/graphtest"
	"github.com/filemill/filemill/rest/openapitest"
)

// client is a careful client of the two API processes: every POST carries an
// Idempotency-Key kept across its retries; a refused connection, 429, a 5xx or an
// answer with Retry-After is tried again, on the other API, after a growing pause.
type client struct {
	apis []string
	key  string
	http *http.Client
	// answers counts every answer by status (0: no answer).
	mu      sync.Mutex
	answers map[int]int
	next    atomic.Int64
	// putAgain counts uploads whose completion found no bytes after MinIO acknowledged
	// the PUT: MinIO killed in the middle of assembling the upload loses its part (seen
	// here); the client PUTs again, as the answer tells it to.
	putAgain atomic.Int64
}

func newClient(v *openapitest.Validator, apis []string, key string) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	return &client{apis: apis, key: key, http: &http.Client{Transport: v.Transport(tr), Timeout: 60 * time.Second},
		answers: map[int]int{}}
}

func newIdem() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errGaveUp is a request that got no lasting answer within its bound.
var errGaveUp = errors.New("no answer but errors within the bound")

// once sends one request to api and decodes the JSON answer.
func (c *client) once(ctx context.Context, api, method, path string, body any, idem string) (int, map[string]any, http.Header, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequestWithContext(ctx, method, api+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := c.http.Do(req)
	c.mu.Lock()
	if err != nil {
		c.answers[0]++
	} else {
		c.answers[resp.StatusCode]++
	}
	c.mu.Unlock()
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, resp.Header, nil
}

// do sends a request until an answer that is not worth trying again, or until bound.
func (c *client) do(ctx context.Context, bound time.Duration, method, path string, body any) (int, map[string]any, error) {
	status, m, _, err := c.doFrom(ctx, bound, int(c.next.Add(1)), method, path, body)
	return status, m, err
}

// doFrom is do sending first to API first (modulo their number), the next one after a
// failure; it answers also the index of the API whose answer it returns.
func (c *client) doFrom(ctx context.Context, bound time.Duration, first int, method, path string, body any) (int, map[string]any, int, error) {
	idem := ""
	if method == "POST" {
		idem = newIdem()
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	pause := 50 * time.Millisecond
	for i := first; ; i++ {
		status, m, h, err := c.once(ctx, c.apis[i%len(c.apis)], method, path, body, idem)
		if err == nil && status < 500 && status != 429 && h.Get("Retry-After") == "" {
			return status, m, i % len(c.apis), nil
		}
		select {
		case <-ctx.Done():
			return status, m, i % len(c.apis), fmt.Errorf("%s %s: %w (last: %d %v %v)", method, path, errGaveUp, status, m, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// put sends bytes to a pre-signed upload URL until stored.
func (c *client) put(ctx context.Context, bound time.Duration, url string, headers map[string]any, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	pause := 50 * time.Millisecond
	for {
		req, _ := http.NewRequestWithContext(ctx, "PUT", url, bytes.NewReader(data))
		for k, v := range headers {
			req.Header.Set(k, fmt.Sprint(v))
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 300 {
				return nil
			}
			if resp.StatusCode < 500 {
				return fmt.Errorf("PUT upload: %d", resp.StatusCode)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("PUT upload: %w (%v)", errGaveUp, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// upload stores data as a ready file through a pre-signed URL and answers its id.
func (c *client) upload(ctx context.Context, name string, data []byte) (string, error) {
	status, up, err := c.do(ctx, requestBound, "POST", "/v1/uploads", map[string]any{"filename": name, "byte_size": len(data)})
	if err != nil {
		return "", err
	}
	if status != 201 {
		return "", fmt.Errorf("POST /v1/uploads: %d %v", status, up)
	}
	headers, _ := up["upload_headers"].(map[string]any)
	if err := c.put(ctx, requestBound, up["upload_url"].(string), headers, data); err != nil {
		return "", err
	}
	status, f, err := c.do(ctx, requestBound, "POST", "/v1/files/"+up["file_id"].(string)+"/complete", nil)
	if err != nil {
		return "", err
	}
	if e, _ := f["error"].(map[string]any); status == 409 && e["code"] == "conflict" {
		c.putAgain.Add(1)
		if err := c.put(ctx, requestBound, up["upload_url"].(string), headers, data); err != nil {
			return "", err
		}
		if status, f, err = c.do(ctx, requestBound, "POST", "/v1/files/"+up["file_id"].(string)+"/complete", nil); err != nil {
			return "", err
		}
	}
	if status != 200 || f["status"] != "ready" {
		return "", fmt.Errorf("complete %s: %d %v", up["file_id"], status, f)
	}
	return f["id"].(string), nil
}

var terminal = map[string]bool{"succeeded": true, "failed": true, "cancelled": true}

// poll reads a job until it is terminal and answers its state.
func (c *client) poll(ctx context.Context, bound time.Duration, path, field string, done func(string) bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		status, m, err := c.do(ctx, bound, "GET", path, nil)
		if err != nil {
			return "", err
		}
		if status != 200 {
			return "", fmt.Errorf("GET %s: %d %v", path, status, m)
		}
		if s, _ := m[field].(string); done(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("GET %s: not done within %s: %v", path, bound, m)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

const jobSubscription = `subscription($id: ID!) { jobUpdated(id: $id) { id state } }`

// follow watches a job over a GraphQL subscription until it is terminal, dialling
// again (the other API) whenever the connection ends first, as a console would; a
// subscriber arriving after the end gets the final state. It answers the terminal
// state seen and how many times it subscribed.
func (c *client) follow(ctx context.Context, bound time.Duration, jobID string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	pause := 100 * time.Millisecond
	for n := 1; ; n++ {
		api := c.apis[int(c.next.Add(1))%len(c.apis)]
		conn, err := graphtest.Dial(ctx, graphtest.URL(api), graphtest.Options{Protocol: graphtest.TransportWS,
			Header: http.Header{"Authorization": {"Bearer " + c.key}}})
		if err == nil {
			_, ch, err := conn.Subscribe(jobSubscription, map[string]any{"id": jobID})
			if err == nil {
			read:
				for {
					select {
					case r, ok := <-ch:
						if !ok {
							break read
						}
						if len(r.Errors) > 0 {
							break read // e.g. the database was down: subscribe again
						}
						if j, _ := r.Data["jobUpdated"].(map[string]any); j != nil && terminal[fmt.Sprint(j["state"])] {
							conn.Close()
							return j["state"].(string), n, nil
						}
					case <-ctx.Done():
						conn.Close()
						return "", n, fmt.Errorf("subscription to %s: no terminal state within %s", jobID, bound)
					}
				}
			}
			conn.Close()
		}
		select {
		case <-ctx.Done():
			return "", n, fmt.Errorf("subscription to %s: %w (%v)", jobID, errGaveUp, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}
