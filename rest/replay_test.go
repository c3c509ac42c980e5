package rest_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// keyID returns the id of a key secret.
func (b *bundle) keyID(secret string) string {
	b.t.Helper()
	p, err := b.svc.Keys.Authenticate(context.Background(), secret, netip.MustParseAddr("127.0.0.1"))
	require.NoError(b.t, err)
	return p.Key.ID
}

// TestReplayIsAuthorizedFirst: a retry with the Idempotency-Key of an answered request
// passes every check a fresh request with that body would pass before the stored answer
// is handed out; a key that would be refused gets the refusal, never the answer.
func TestReplayIsAuthorizedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, err := b.svc.Organizations.CreateProject(ctx, b.orgA.Organization.ID, "other")
	require.NoError(t, err)
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	job := map[string]any{"file_id": file, "operation": "inspect"}
	created := b.do(req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: "job-1", body: job})
	require.Equal(t, 202, created.status, string(created.body))
	jobID := created.json(t)["id"].(string)
	dlPath, dlBody := "/v1/files/"+file+"/download-url", map[string]any{"expires_in": 600}
	minted := b.do(req{method: "POST", path: dlPath, key: b.liveA, idem: "dl-1", body: dlBody})
	require.Equal(t, 201, minted.status, string(minted.body))
	url := minted.json(t)["url"].(string)

	revoked := b.newKey(nil)
	require.NoError(t, b.svc.Keys.RevokeKey(ctx, b.keyID(revoked)))
	limited := b.newKey(func(k *domain.NewKey) { k.RateLimit = 1 })
	require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: limited}).status, "the one request of its minute")

	replayJob := func(key string) req {
		return req{method: "POST", path: "/v1/jobs", key: key, idem: "job-1", body: job}
	}
	cases := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"KeyLackingTheScope", req{method: "POST", path: dlPath, idem: "dl-1", body: dlBody,
			key: b.newKey(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeUsageRead} })}, 403, domain.CodeInsufficientScope},
		{"KeyWithReadScopesOnly", replayJob(b.newKey(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeJobsRead, domain.ScopeFilesRead} })),
			403, domain.CodeInsufficientScope},
		{"OtherEnvironmentsKey", replayJob(b.testA), 403, domain.CodeEnvironmentMismatch},
		{"OtherEnvironmentsKeyForTheURL", req{method: "POST", path: dlPath, key: b.testA, idem: "dl-1", body: dlBody}, 403, domain.CodeEnvironmentMismatch},
		{"KeyRestrictedToAnotherOperation", replayJob(b.newKey(func(k *domain.NewKey) { k.AllowedOperations = []string{"scan"} })),
			403, domain.CodeOperationNotAllowed},
		{"KeyRestrictedToAnotherProject", replayJob(b.newKey(func(k *domain.NewKey) {
			k.ProjectID, k.AllowedProjects = other.ID, []string{other.ID}
		})), 403, domain.CodeKeyRestricted},
		{"KeyRestrictedToAnotherProjectForTheURL", req{method: "POST", path: dlPath, idem: "dl-1", body: dlBody, key: b.newKey(func(k *domain.NewKey) {
			k.ProjectID, k.AllowedProjects = other.ID, []string{other.ID}
		})}, 403, domain.CodeKeyRestricted},
		{"KeyFromAnotherAddress", replayJob(b.newKey(func(k *domain.NewKey) { k.IPAllowList = []string{"10.0.0.0/8"} })),
			403, domain.CodeIPNotAllowed},
		{"ExpiredKey", replayJob(b.newKey(func(k *domain.NewKey) { k.ExpiresAt = past() })), 401, domain.CodeExpiredAPIKey},
		{"RevokedKey", replayJob(revoked), 401, domain.CodeRevokedAPIKey},
		{"RateLimitedKey", replayJob(limited), 429, domain.CodeRateLimited},
		{"OtherOrganizationsKey", replayJob(b.keyB), 404, domain.CodeNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.do(c.r)
			require.Equal(t, c.status, r.status, string(r.body))
			require.Equal(t, c.code, r.errorCode(t))
			require.Empty(t, r.header.Get("Idempotent-Replayed"))
			require.NotContains(t, string(r.body), jobID)
			require.NotContains(t, string(r.body), url)
		})
	}

	t.Run("AuthorizedKeysGetTheStoredAnswer", func(t *testing.T) {
		// Another key of the environment and project that may do the same gets the
		// same answer: the key of a request is scoped to (organization, environment,
		// project, endpoint) — a job holds no credential. The download URL does: it is
		// replayed to its own key.
		for _, key := range []string{b.liveA, b.newKey(nil)} {
			r := b.do(replayJob(key))
			require.Equal(t, 202, r.status, string(r.body))
			require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
			require.Equal(t, string(created.body), string(r.body))
		}
		r := b.do(req{method: "POST", path: dlPath, key: b.liveA, idem: "dl-1", body: dlBody})
		require.Equal(t, string(minted.body), string(r.body))
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	})

	t.Run("SuspendedOrganization", func(t *testing.T) {
		org, err := b.svc.Organizations.Bootstrap(ctx, "org-suspended", "main", 0)
		require.NoError(t, err)
		hook := req{method: "POST", path: "/v1/webhook-endpoints", key: org.LiveSecret, idem: "hook-1", body: webhookBody("https://example.com/s")}
		first := b.do(hook)
		require.Equal(t, 201, first.status, string(first.body))
		_, err = b.svc.Organizations.SetSuspended(ctx, org.Organization.ID, true)
		require.NoError(t, err)
		r := b.do(hook)
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeOrganizationSuspended, r.errorCode(t))
		require.NotContains(t, string(r.body), "whsec_", "the secret stays stored")
		_, err = b.svc.Organizations.SetSuspended(ctx, org.Organization.ID, false)
		require.NoError(t, err)
		r = b.do(hook)
		require.Equal(t, string(first.body), string(r.body))
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	})
}

// TestRefusalIsNeverStored: an authorization refusal is decided afresh for every request:
// it is not stored under the key, so the key's next request with the same body, by a key
// that may make it, runs and gets the real answer.
func TestRefusalIsNeverStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	job := map[string]any{"file_id": file, "operation": "inspect"}
	for _, c := range []struct {
		name, key, code string
	}{
		{"InsufficientScope", b.newKey(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeJobsRead} }), domain.CodeInsufficientScope},
		{"OperationNotAllowed", b.newKey(func(k *domain.NewKey) { k.AllowedOperations = []string{"scan"} }), domain.CodeOperationNotAllowed},
		{"EnvironmentMismatch", b.testA, domain.CodeEnvironmentMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "refused-" + c.name
			r := b.do(req{method: "POST", path: "/v1/jobs", key: c.key, idem: key, body: job})
			require.Equal(t, 403, r.status, string(r.body))
			require.Equal(t, c.code, r.errorCode(t))
			again := b.do(req{method: "POST", path: "/v1/jobs", key: c.key, idem: key, body: job})
			require.Equal(t, 403, again.status)
			require.Empty(t, again.header.Get("Idempotent-Replayed"), "decided again, not replayed")

			full := b.do(req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: key, body: job})
			require.Equal(t, 202, full.status, string(full.body))
			require.Empty(t, full.header.Get("Idempotent-Replayed"), "the refusal was not stored: this request ran")
			replay := b.do(req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: key, body: job})
			require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
			require.Equal(t, string(full.body), string(replay.body))
		})
	}
}
