package rest_test

import (
	"context"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

func TestAuthenticationFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	revoked := b.newKey(nil)
	keys, err := b.svc.Keys.ListKeys(ctx, domain.APIKeyFilter{OrganizationID: b.orgA.Organization.ID})
	require.NoError(t, err)
	for _, k := range keys {
		if k.Hash == domain.HashKey(revoked) {
			require.NoError(t, b.svc.Keys.RevokeKey(ctx, k.ID))
		}
	}
	expired := b.newKey(func(k *domain.NewKey) { k.ExpiresAt = past() })

	cases := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"MissingCredentials", req{method: "GET", path: "/v1/jobs"}, 401, domain.CodeMissingCredentials},
		{"MalformedKey", req{method: "GET", path: "/v1/jobs", key: "nope"}, 401, domain.CodeInvalidAPIKey},
		{"UnknownKey", req{method: "GET", path: "/v1/jobs", key: "fm_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, 401, domain.CodeInvalidAPIKey},
		{"WrongScheme", req{method: "GET", path: "/v1/jobs", header: map[string]string{"Authorization": "Basic " + b.liveA}}, 401, domain.CodeInvalidAPIKey},
		{"ExpiredKey", req{method: "GET", path: "/v1/jobs", key: expired}, 401, domain.CodeExpiredAPIKey},
		{"RevokedKey", req{method: "GET", path: "/v1/jobs", key: revoked}, 401, domain.CodeRevokedAPIKey},
		{"KeyInQueryAlone", req{method: "GET", path: "/v1/jobs?api_key=" + b.liveA}, 401, domain.CodeAPIKeyInQuery},
		{"KeyInQueryWithValidHeader", req{method: "GET", path: "/v1/jobs?access_token=x", key: b.liveA}, 401, domain.CodeAPIKeyInQuery},
		{"KeyParamInQuery", req{method: "GET", path: "/v1/jobs?key=x", key: b.liveA}, 401, domain.CodeAPIKeyInQuery},
		{"TwoAuthorizationHeaders", req{method: "GET", path: "/v1/jobs", key: b.liveA,
			added: http.Header{"Authorization": {"Bearer " + b.testA}}}, 401, domain.CodeInvalidAPIKey},
		{"TwoAuthorizationHeadersOfOneKey", req{method: "GET", path: "/v1/jobs", key: b.liveA,
			added: http.Header{"Authorization": {"Bearer " + b.liveA}}}, 401, domain.CodeInvalidAPIKey},
		{"TwoAuthorizationHeadersOnAPost", req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "two-headers",
			body: webhookBody("https://example.com/two"), added: http.Header{"Authorization": {"Bearer " + b.liveA}}}, 401, domain.CodeInvalidAPIKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.do(c.r)
			require.Equal(t, c.status, r.status, string(r.body))
			require.Equal(t, c.code, r.errorCode(t))
			require.NotEmpty(t, r.header.Get("X-Request-Id"))
			require.NotEmpty(t, r.header.Get("X-RateLimit-Limit"))
			require.Equal(t, []string{"Bearer"}, r.header.Values("WWW-Authenticate"), "every 401 names the scheme")
		})
	}
	t.Run("NoChallengeOnOtherAnswers", func(t *testing.T) {
		require.Empty(t, b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA}).header.Get("WWW-Authenticate"))
		readOnly := b.newKey(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeJobsRead} })
		r := b.do(req{method: "GET", path: "/v1/files", key: readOnly})
		require.Equal(t, 403, r.status)
		require.Empty(t, r.header.Get("WWW-Authenticate"))
	})
}

func TestForbiddenCodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, err := b.svc.Organizations.CreateProject(ctx, b.orgA.Organization.ID, "other")
	require.NoError(t, err)
	third, err := b.svc.Organizations.CreateProject(ctx, b.orgA.Organization.ID, "third")
	require.NoError(t, err)

	readOnly := b.newKey(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeJobsRead} })
	fromElsewhere := b.newKey(func(k *domain.NewKey) { k.IPAllowList = []string{"10.0.0.0/8"} })
	fromHere := b.newKey(func(k *domain.NewKey) { k.IPAllowList = []string{"127.0.0.1"} })
	restricted := b.newKey(func(k *domain.NewKey) { k.AllowedProjects = []string{other.ID} })

	t.Run("InsufficientScope", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: readOnly, idem: "s1", body: webhookBody("https://example.com/h")})
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeInsufficientScope, r.errorCode(t))
		require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: readOnly}).status)
	})
	t.Run("IPNotAllowed", func(t *testing.T) {
		r := b.do(req{method: "GET", path: "/v1/jobs", key: fromElsewhere})
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeIPNotAllowed, r.errorCode(t))
		require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: fromHere}).status)
	})
	t.Run("KeyRestricted", func(t *testing.T) {
		r := b.do(req{method: "GET", path: "/v1/jobs?project_id=" + third.ID, key: restricted})
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeKeyRestricted, r.errorCode(t))
		require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs?project_id=" + other.ID, key: restricted}).status)
	})
	t.Run("EnvironmentMismatch", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "e1", body: webhookBody("https://example.com/live")})
		require.Equal(t, 201, r.status, string(r.body))
		id := r.json(t)["id"].(string)
		r = b.do(req{method: "DELETE", path: "/v1/webhook-endpoints/" + id, key: b.testA})
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeEnvironmentMismatch, r.errorCode(t))
	})
	t.Run("OrganizationSuspended", func(t *testing.T) {
		// Its own organization, so the other subtests keep working.
		s, err := b.svc.Organizations.Bootstrap(ctx, "suspended-org", "p", 0)
		require.NoError(t, err)
		require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: s.LiveSecret}).status)
		_, err = b.svc.Organizations.SetSuspended(ctx, s.Organization.ID, true)
		require.NoError(t, err)
		r := b.do(req{method: "GET", path: "/v1/jobs", key: s.LiveSecret})
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeOrganizationSuspended, r.errorCode(t))
		_, err = b.svc.Organizations.SetSuspended(ctx, s.Organization.ID, false)
		require.NoError(t, err)
		require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: s.LiveSecret}).status)
	})
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.keyB, idem: "b1", body: webhookBody("https://example.com/b")})
	require.Equal(t, 201, r.status, string(r.body))
	idB := r.json(t)["id"].(string)

	t.Run("OtherOrganizationsResourceIs404", func(t *testing.T) {
		r := b.do(req{method: "DELETE", path: "/v1/webhook-endpoints/" + idB, key: b.liveA})
		require.Equal(t, 404, r.status)
		require.Equal(t, domain.CodeNotFound, r.errorCode(t))
	})
	t.Run("OtherOrganizationsProjectIs404", func(t *testing.T) {
		r := b.do(req{method: "GET", path: "/v1/jobs?project_id=" + b.orgB.Project.ID, key: b.liveA})
		require.Equal(t, 404, r.status)
	})
	t.Run("ListsShowOnlyOwnOrganization", func(t *testing.T) {
		r := b.do(req{method: "GET", path: "/v1/webhook-endpoints", key: b.liveA})
		require.Equal(t, 200, r.status)
		require.Empty(t, r.json(t)["data"])
	})
	t.Run("OtherOrganizationsCursorIs400", func(t *testing.T) {
		r := b.do(req{method: "GET", path: "/v1/webhook-endpoints?starting_after=" + idB, key: b.liveA})
		require.Equal(t, 400, r.status)
		require.Equal(t, domain.CodeInvalidRequest, r.errorCode(t))
	})
	t.Run("MalformedIDIs404", func(t *testing.T) {
		for _, path := range []string{"/v1/jobs/nope", "/v1/jobs/" + idB, "/v1/jobs/job_01ARZ3NDEKTSV4RRFFQ69G5FAV"} {
			r := b.do(req{method: "GET", path: path, key: b.liveA})
			require.Equal(t, 404, r.status, path)
		}
	})
	t.Run("OwnerStillSeesIt", func(t *testing.T) {
		r := b.do(req{method: "DELETE", path: "/v1/webhook-endpoints/" + idB, key: b.keyB})
		require.Equal(t, http.StatusNoContent, r.status)
		r = b.do(req{method: "DELETE", path: "/v1/webhook-endpoints/" + idB, key: b.keyB})
		require.Equal(t, 404, r.status)
	})
}

// TestAuthCache shows what the in-process key cache changes: a change made through this
// process's services applies at once; one made by another process (here straight in the
// store) applies once the cache entry is older than AuthCacheTTL.
func TestAuthCache(t *testing.T) {
	t.Parallel()
	clock := &shiftedClock{}
	b := setup(t, setupOpts{clock: clock})
	ctx := context.Background()
	list := func(key string) response { return b.do(req{method: "GET", path: "/v1/jobs", key: key}) }

	t.Run("RevokedHereIsRefusedAtOnce", func(t *testing.T) {
		key := b.newKey(nil)
		require.Equal(t, 200, list(key).status)
		p, err := b.svc.Keys.Authenticate(ctx, key, netip.MustParseAddr("127.0.0.1"))
		require.NoError(t, err)
		require.NoError(t, b.svc.Keys.RevokeKey(ctx, p.Key.ID))
		r := list(key)
		require.Equal(t, 401, r.status)
		require.Equal(t, domain.CodeRevokedAPIKey, r.errorCode(t))
	})

	t.Run("RevokedElsewhereIsRefusedWithinTheTTL", func(t *testing.T) {
		key := b.newKey(nil)
		require.Equal(t, 200, list(key).status)
		p, err := b.svc.Keys.Authenticate(ctx, key, netip.MustParseAddr("127.0.0.1"))
		require.NoError(t, err)
		require.NoError(t, b.store.RevokeAPIKey(ctx, p.Key.ID, clock.Now()))
		require.Equal(t, 200, list(key).status, "still remembered")
		clock.advance(b.svc.Config.AuthCacheTTL)
		r := list(key)
		require.Equal(t, 401, r.status)
		require.Equal(t, domain.CodeRevokedAPIKey, r.errorCode(t))
	})

	t.Run("SuspendedHereIsRefusedAtOnce", func(t *testing.T) {
		org, err := b.svc.Organizations.Bootstrap(ctx, "org-cache", "main", 0)
		require.NoError(t, err)
		require.Equal(t, 200, list(org.LiveSecret).status)
		_, err = b.svc.Organizations.SetSuspended(ctx, org.Organization.ID, true)
		require.NoError(t, err)
		r := list(org.LiveSecret)
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeOrganizationSuspended, r.errorCode(t))
	})
}
