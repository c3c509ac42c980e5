package webhook_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/client/webhook"
)

// Signatures made by the Standard Webhooks reference library verify; anything changed
// does not.
func TestVerifyAgainstTheReferenceSigner(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const other = "whsec_dGhlIG90aGVyIHNlY3JldCBvZiAyNCBieXRlcw=="
	ref, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	body := []byte(`{"id":"evt_01JD8X6Q2V9W3Z4Y5A6B7C8D9E","object":"event","type":"job.succeeded","created_at":"2026-11-27T10:00:00Z","data":{"object":{"id":"job_01JD8X6Q2V9W3Z4Y5A6B7C8D9E","object":"job","state":"succeeded","progress":100}}}`)
	now := time.Now()
	sig, err := ref.Sign("evt_01JD8X6Q2V9W3Z4Y5A6B7C8D9E", now, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set("webhook-id", "evt_01JD8X6Q2V9W3Z4Y5A6B7C8D9E")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)

	ev, err := webhook.Verify([]string{secret}, h, body)
	require.NoError(t, err)
	job, err := ev.Job()
	require.NoError(t, err)
	require.Equal(t, "job_01JD8X6Q2V9W3Z4Y5A6B7C8D9E", job.Id)
	require.EqualValues(t, "succeeded", job.State)

	t.Run("TamperedBody", func(t *testing.T) {
		bad := append([]byte(nil), body...)
		bad[len(bad)-3] = '9'
		_, err := webhook.Verify([]string{secret}, h, bad)
		require.ErrorIs(t, err, webhook.ErrSignature)
	})
	t.Run("OtherSecret", func(t *testing.T) {
		_, err := webhook.Verify([]string{other}, h, body)
		require.ErrorIs(t, err, webhook.ErrSignature)
	})
	t.Run("RotationSignsTwice", func(t *testing.T) {
		h2 := h.Clone()
		h2.Set("webhook-signature", "v1,bm90IGl0 "+sig)
		_, err := webhook.Verify([]string{other, secret}, h2, body)
		require.NoError(t, err)
	})
	t.Run("OldTimestamp", func(t *testing.T) {
		v := webhook.Verifier{Secrets: []string{secret}, Now: func() time.Time { return now.Add(6 * time.Minute) }}
		_, err := v.Verify(h, body)
		require.ErrorIs(t, err, webhook.ErrTimestamp)
	})
	t.Run("MissingHeaders", func(t *testing.T) {
		h2 := h.Clone()
		h2.Del("webhook-signature")
		_, err := webhook.Verify([]string{secret}, h2, body)
		require.ErrorIs(t, err, webhook.ErrMissingHeaders)
	})
}

// Headers signs as the reference library does, so a receiver using either verifies
// what a local forwarder sends.
func TestHeadersMatchTheReferenceSigner(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	ref, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	body := []byte(`{"id":"evt_1","object":"event","type":"file.ready","created_at":"2026-11-27T10:00:00Z","data":{"object":{}}}`)
	now := time.Now()
	h, err := webhook.Headers(secret, "evt_1", now, body)
	require.NoError(t, err)
	want, err := ref.Sign("evt_1", now, body)
	require.NoError(t, err)
	require.Equal(t, want, h.Get("webhook-signature"))
	require.NoError(t, ref.Verify(body, h))
	_, err = webhook.Verify([]string{secret}, h, body)
	require.NoError(t, err)
	_, err = webhook.Verify([]string{webhook.NewSecret()}, h, body)
	require.ErrorIs(t, err, webhook.ErrSignature, "another secret does not verify")
}
