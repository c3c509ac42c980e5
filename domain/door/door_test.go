package door_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
	"github.com/filemill/filemill/jobs/ratelimit"
	"github.com/filemill/filemill/jobs/redistest"
)

// sessions authenticates by a cookie (and, on a websocket, by a "session" in its first
// message): a principal of another kind than an API key, as the console's sessions are,
// plugged in as one more Authenticator.
type sessions map[string]*domain.Principal

func (s sessions) Authenticate(r *http.Request, _ netip.Addr) (*door.Identity, error) {
	c, err := r.Cookie("session")
	if err != nil {
		return nil, nil
	}
	return s.find(c.Value)
}

func (s sessions) AuthenticateInit(_ context.Context, payload map[string]any, _ netip.Addr) (*door.Identity, error) {
	v, _ := payload["session"].(string)
	if v == "" {
		return nil, nil
	}
	return s.find(v)
}

func (s sessions) find(id string) (*door.Identity, error) {
	p, ok := s[id]
	if !ok {
		return nil, domain.Errorf(domain.CodeForbidden, "no such session")
	}
	return &door.Identity{Principal: p, Recheck: func(context.Context) error { return nil }}, nil
}

func principal(id string) *domain.Principal {
	return &domain.Principal{Key: &domain.APIKey{ID: id, Environment: domain.EnvLive}, Organization: &domain.Organization{ID: "org_" + id}}
}

// fixture is a door with a real rate limiter of perMinute requests, a session
// authenticator before the API keys, and a handler that reports who it ran for.
type fixture struct {
	door    *door.Door
	refused []error
	ran     []*domain.Principal
	ids     []string // the request ids the handler saw
	logs    bytes.Buffer
}

func newFixture(t *testing.T, perMinute int, socketsLater bool) *fixture {
	t.Helper()
	opts, err := redis.ParseURL(redistest.URL(t))
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	f := &fixture{}
	log := slog.New(slog.NewJSONHandler(&f.logs, nil))
	f.door = door.New(door.Config{
		Limits:         domain.NewRateLimits(ratelimit.New(rdb), perMinute, nil, log),
		Authenticators: []door.Authenticator{sessions{"s1": principal("key_s1")}, door.APIKeys{}},
		Refuse: func(w http.ResponseWriter, r *http.Request, err error) {
			f.refused = append(f.refused, err)
			w.WriteHeader(http.StatusTeapot)
		},
		SocketsAuthenticateLater: socketsLater,
		Log:                      log,
	})
	return f
}

func (f *fixture) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	f.door.Mount(f.door.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.ran = append(f.ran, door.Principal(r.Context()))
		f.ids = append(f.ids, door.RequestID(r.Context()))
	}))).ServeHTTP(w, r)
	return w
}

func request(cookie string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/things", nil)
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: "session", Value: cookie})
	}
	return r
}

func TestAnotherPrincipalPlugsIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, false)

	w := f.serve(request("s1"))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, []*domain.Principal{principal("key_s1")}, f.ran, "the session's principal runs the handler")
	require.Equal(t, []string{w.Header().Get("X-Request-Id")}, f.ids, "the id answered is the request's")
	require.Equal(t, "99", w.Header().Get("X-RateLimit-Remaining"), "charged to the principal's bucket")

	for name, c := range map[string]struct {
		r    *http.Request
		code string
	}{
		"UnknownSession":   {request("nope"), domain.CodeForbidden},
		"NoCredential":     {request(""), domain.CodeMissingCredentials},
		"KeyInQueryString": {httptest.NewRequest("GET", "/v1/things?api_key=x", nil), domain.CodeAPIKeyInQuery},
	} {
		t.Run(name, func(t *testing.T) {
			f.refused = nil
			if name == "KeyInQueryString" {
				c.r.AddCookie(&http.Cookie{Name: "session", Value: "s1"}) // refused even beside a valid credential
			}
			w := f.serve(c.r)
			require.Equal(t, http.StatusTeapot, w.Code, "the door's own refusal")
			require.Len(t, f.refused, 1)
			require.Equal(t, c.code, domain.ErrorCode(f.refused[0]))
			require.NotEmpty(t, w.Header().Get("X-RateLimit-Limit"), "a refusal carries the headers too")
		})
	}

	// One access-log line per request, with its id and status.
	var line map[string]any
	require.NoError(t, json.NewDecoder(bytes.NewReader(f.logs.Bytes())).Decode(&line))
	require.Equal(t, "request", line["msg"])
	require.Equal(t, w.Header().Get("X-Request-Id"), line["request_id"])
	require.EqualValues(t, 200, line["status"])
}

// TestRateLimitRefusesFirst: the token is taken before authentication's refusal is
// answered, so a client trying credentials is slowed as any other; once its bucket is
// empty the rate limit is the answer, whatever the credential.
func TestRateLimitRefusesFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, false)
	for i, want := range []string{domain.CodeForbidden, domain.CodeForbidden, domain.CodeRateLimited} {
		f.refused = nil
		w := f.serve(request("nope"))
		require.Len(t, f.refused, 1, "request %d", i)
		require.Equal(t, want, domain.ErrorCode(f.refused[0]), "request %d", i)
		require.Equal(t, []string{"1", "0", "0"}[i], w.Header().Get("X-RateLimit-Remaining"), "request %d", i)
	}
	require.Empty(t, f.ran)
}

func TestSocketsAuthenticateInTheirFirstMessage(t *testing.T) {
	t.Parallel()
	upgrade := func() *http.Request {
		r := request("")
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		return r
	}
	t.Run("RefusedWhereNotOffered", func(t *testing.T) {
		f := newFixture(t, 100, false)
		f.serve(upgrade())
		require.Empty(t, f.ran)
		require.Equal(t, domain.CodeMissingCredentials, domain.ErrorCode(f.refused[0]))
	})
	t.Run("LetThroughUnauthenticated", func(t *testing.T) {
		f := newFixture(t, 100, true)
		var ctx context.Context
		w := httptest.NewRecorder()
		f.door.Authenticate(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { ctx = r.Context() })).ServeHTTP(w, upgrade())
		require.NotNil(t, ctx)
		require.Nil(t, door.Principal(ctx))
		require.Equal(t, "99", w.Header().Get("X-RateLimit-Remaining"), "charged to its address")

		_, err := f.door.AuthenticateInit(ctx, map[string]any{})
		require.Equal(t, domain.CodeMissingCredentials, domain.ErrorCode(err))
		_, err = f.door.AuthenticateInit(ctx, map[string]any{"session": "nope"})
		require.Equal(t, domain.CodeForbidden, domain.ErrorCode(err))
		authed, err := f.door.AuthenticateInit(ctx, map[string]any{"session": "s1"})
		require.NoError(t, err)
		require.Equal(t, principal("key_s1"), door.Principal(authed))
		require.NoError(t, door.IdentityOf(authed).Recheck(authed))

		// Each operation over it takes a token of the principal's own bucket.
		require.NoError(t, f.door.AdmitOperation(authed))
	})
	t.Run("AQueryStringKeyIsRefusedThereToo", func(t *testing.T) {
		f := newFixture(t, 100, true)
		r := upgrade()
		r.URL.RawQuery = "access_token=x"
		f.serve(r)
		require.Empty(t, f.ran)
		require.Equal(t, domain.CodeAPIKeyInQuery, domain.ErrorCode(f.refused[0]))
	})
}
