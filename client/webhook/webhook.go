// Package webhook verifies the deliveries filemill signs (the Standard Webhooks scheme)
// and decodes their event.
//
// A delivery carries webhook-id, webhook-timestamp (unix seconds) and
// webhook-signature: space-separated "v1,<base64 HMAC-SHA256>" over
// id + "." + timestamp + "." + body, keyed by the base64-decoded part of the
// endpoint's "whsec_" secret. While a rotated secret still signs, a delivery carries
// two signatures; pass both secrets, or only the new one.
//
// It imports only the standard library and the SDK's generated types.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/filemill/filemill/client/api"
)

// Errors of Verify; match with errors.Is.
var (
	ErrMissingHeaders = errors.New("webhook: webhook-id, webhook-timestamp or webhook-signature is missing")
	ErrTimestamp      = errors.New("webhook: webhook-timestamp is outside the tolerance")
	ErrSignature      = errors.New("webhook: no signature matches")
)

// DefaultTolerance is how far webhook-timestamp may be from now: older deliveries are
// refused so a captured one cannot be replayed later.
const DefaultTolerance = 5 * time.Minute

// Event is a delivered event. Data.Object is the resource it is about (a job for
// job.*, a file for file.*), as the API shows it: decode it with Job or File.
type Event struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// Job decodes the job of a job.* event.
func (e *Event) Job() (*api.Job, error) {
	if !strings.HasPrefix(e.Type, "job.") {
		return nil, fmt.Errorf("webhook: a %s event is not about a job", e.Type)
	}
	var j api.Job
	if err := json.Unmarshal(e.Data.Object, &j); err != nil {
		return nil, fmt.Errorf("webhook: decode the job: %w", err)
	}
	return &j, nil
}

// File decodes the file of a file.* event.
func (e *Event) File() (*api.File, error) {
	if !strings.HasPrefix(e.Type, "file.") {
		return nil, fmt.Errorf("webhook: a %s event is not about a file", e.Type)
	}
	var f api.File
	if err := json.Unmarshal(e.Data.Object, &f); err != nil {
		return nil, fmt.Errorf("webhook: decode the file: %w", err)
	}
	return &f, nil
}

// Verify checks a delivery against the endpoint's secrets (any one may match) with
// DefaultTolerance, and answers its event. Pass the body exactly as received.
func Verify(secrets []string, headers http.Header, body []byte) (*Event, error) {
	return Verifier{Secrets: secrets}.Verify(headers, body)
}

// Verifier is Verify with its settings spelled out.
type Verifier struct {
	// Secrets are the endpoint's "whsec_…" secrets.
	Secrets []string
	// Tolerance is how far webhook-timestamp may be from now; zero means
	// DefaultTolerance.
	Tolerance time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Verify checks a delivery and answers its event.
func (v Verifier) Verify(headers http.Header, body []byte) (*Event, error) {
	id, ts, sigs := headers.Get("webhook-id"), headers.Get("webhook-timestamp"), headers.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return nil, ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not unix seconds", ErrTimestamp, ts)
	}
	now, tol := time.Now(), v.Tolerance
	if v.Now != nil {
		now = v.Now()
	}
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if at := time.Unix(sec, 0); at.Before(now.Add(-tol)) || at.After(now.Add(tol)) {
		return nil, ErrTimestamp
	}
	if len(v.Secrets) == 0 {
		return nil, errors.New("webhook: no secret to verify with")
	}
	var given [][]byte
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		if raw, err := base64.StdEncoding.DecodeString(sig); err == nil {
			given = append(given, raw)
		}
	}
	for _, secret := range v.Secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			return nil, fmt.Errorf("webhook: a secret is not whsec_ + base64: %w", err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		want := mac.Sum(nil)
		for _, g := range given {
			if hmac.Equal(g, want) {
				var ev Event
				if err := json.Unmarshal(body, &ev); err != nil {
					return nil, fmt.Errorf("webhook: decode the event: %w", err)
				}
				return &ev, nil
			}
		}
	}
	return nil, ErrSignature
}

// NewSecret returns a fresh "whsec_" secret (24 random bytes), for a receiver that signs
// deliveries of its own: a local forwarder, a test.
func NewSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// Headers signs body as message msgID sent at at with a "whsec_" secret, the way filemill
// signs its deliveries, and answers the headers that carry it (Content-Type,
// webhook-id, webhook-timestamp, webhook-signature): Verify accepts them.
func Headers(secret, msgID string, at time.Time, body []byte) (http.Header, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, fmt.Errorf("webhook: a secret is not whsec_ + base64: %w", err)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + ts + "."))
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h, nil
}
