package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/graph/graphtest"
)

const consolePassword = "correct horse battery"

// browser is a signed-in console: its cookies, sent as a browser on the console's page
// sends them, with the CSRF header the console's script adds.
type browser struct {
	b             *bundle
	session, csrf string
	headers       map[string]string // more headers (project, environment)
}

// person adds a user with a password and a role to organization A.
func (b *bundle) person(email, role string) *domain.CreatedUser {
	b.t.Helper()
	u, err := b.svc.People.CreateUser(context.Background(), domain.NewUser{OrganizationID: b.orgA.Organization.ID,
		Email: email, Role: role, Password: consolePassword})
	require.NoError(b.t, err)
	return u
}

const signInMutation = `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { csrfToken role user { email } organization { id } } }`

// anonymous posts an operation without credentials, from the console's page.
func (b *bundle) anonymous(query string, vars map[string]any) gqlResponse {
	b.t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(b.t, err)
	return b.post("", body, map[string]string{"Origin": b.srv.URL})
}

// browserOf reads the session cookies a sign-in answer set.
func (b *bundle) browserOf(r gqlResponse) *browser {
	b.t.Helper()
	br := &browser{b: b}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		switch c.Name {
		case door.SessionCookie:
			br.session = c.Value
			require.True(b.t, c.HttpOnly, "the session cookie is HttpOnly")
			require.Equal(b.t, http.SameSiteLaxMode, c.SameSite)
			require.Equal(b.t, "/graphql", c.Path)
		case door.CSRFCookie:
			br.csrf = c.Value
			require.False(b.t, c.HttpOnly, "the console's script reads the CSRF cookie")
		}
	}
	require.NotEmpty(b.t, br.session, "no session cookie in %v", r.header)
	require.NotEmpty(b.t, br.csrf)
	return br
}

func (b *bundle) signIn(email string) *browser {
	b.t.Helper()
	r := b.anonymous(signInMutation, map[string]any{"e": email, "p": consolePassword})
	require.Empty(b.t, r.Errors, string(r.raw))
	br := b.browserOf(r)
	require.Equal(b.t, br.csrf, field(r, "signIn")["csrfToken"])
	return br
}

// request is a POST of an operation with the browser's cookies and extra headers.
func (br *browser) request(query string, vars map[string]any, header map[string]string) gqlResponse {
	br.b.t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(br.b.t, err)
	req, err := http.NewRequest("POST", br.b.srv.URL+"/graphql", bytes.NewReader(body))
	require.NoError(br.b.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(&http.Cookie{Name: door.SessionCookie, Value: br.session})
	req.AddCookie(&http.Cookie{Name: door.CSRFCookie, Value: br.csrf})
	for k, v := range br.headers {
		req.Header.Set(k, v)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return br.b.send(req)
}

// gql posts as the console's page does: same origin, with the CSRF header.
func (br *browser) gql(query string, vars map[string]any) gqlResponse {
	br.b.t.Helper()
	return br.request(query, vars, map[string]string{"Origin": br.b.srv.URL, door.CSRFHeader: br.csrf})
}

// TestConsoleSignIn: a person signs in with a cookie the page cannot read and a CSRF
// token it repeats; a wrong email and a wrong password answer alike; a cross-site
// request with the cookie is refused; nothing but signing in is answered without
// credentials; signing out ends the session.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.person("ada@example.com", domain.RoleOwner)

	wrongPw := b.anonymous(signInMutation, map[string]any{"e": "ada@example.com", "p": "not the password"})
	unknown := b.anonymous(signInMutation, map[string]any{"e": "nobody@example.com", "p": consolePassword})
	for _, r := range []gqlResponse{wrongPw, unknown} {
		require.Nil(t, r.Data, string(r.raw))
		require.Equal(t, "invalid_credentials", r.code(t))
		require.Empty(t, r.header.Values("Set-Cookie"))
	}
	require.Equal(t, wrongPw.Errors[0].Message, unknown.Errors[0].Message)

	br := b.signIn("ada@example.com")
	r := br.gql(`{ viewer { apiKey { id } user { email } role scopes environment organization { id } project { id } } }`, nil).ok(t)
	v := field(r, "viewer")
	require.Nil(t, v["apiKey"])
	require.Equal(t, "ada@example.com", v["user"].(map[string]any)["email"])
	require.Equal(t, "owner", v["role"])
	require.Contains(t, v["scopes"], "organization")
	require.Equal(t, "live", v["environment"])
	require.Equal(t, b.orgA.Project.ID, v["project"].(map[string]any)["id"])
	require.NotEmpty(t, r.header.Get("X-RateLimit-Limit"))
	require.Equal(t, "1200", r.header.Get("X-RateLimit-Limit"), "the console's own rate limit")

	// The console chooses its environment and project.
	br.headers = map[string]string{door.EnvironmentHeader: "test", door.ProjectHeader: b.orgA.Project.ID}
	r = br.gql(`{ viewer { environment } }`, nil).ok(t)
	require.Equal(t, "test", field(r, "viewer")["environment"])
	br.headers = map[string]string{door.ProjectHeader: b.orgB.Project.ID}
	r = br.gql(`{ viewer { environment } }`, nil)
	require.Equal(t, "not_found", r.code(t), "another organization's project does not exist")
	br.headers = nil

	const mutation = `mutation { createProject(input: {name: "from elsewhere"}) { id } }`
	t.Run("CrossSiteWithTheCookieIsRefused", func(t *testing.T) {
		for name, h := range map[string]map[string]string{
			"OtherOrigin":            {"Origin": "https://evil.example", door.CSRFHeader: br.csrf},
			"OtherOriginNoCSRF":      {"Origin": "https://evil.example", door.CSRFHeader: ""},
			"SecFetchSiteCrossSite":  {"Origin": "", "Sec-Fetch-Site": "cross-site", door.CSRFHeader: br.csrf},
			"SameOriginWithoutToken": {"Origin": b.srv.URL, door.CSRFHeader: ""},
			"WrongToken":             {"Origin": b.srv.URL, door.CSRFHeader: br.csrf + "a"},
		} {
			r := br.request(mutation, nil, h)
			require.NotEmpty(t, r.Errors, name)
			require.Nil(t, r.Data, name)
			require.Contains(t, []int{401, 403}, r.status, "%s: %s", name, r.raw)
		}
		r := br.request(mutation, nil, map[string]string{"Origin": "https://evil.example", door.CSRFHeader: br.csrf})
		require.Equal(t, "forbidden", r.code(t))
		r = br.request(mutation, nil, map[string]string{"Origin": b.srv.URL, door.CSRFHeader: ""})
		require.Equal(t, "invalid_session", r.code(t))
		r = br.gql(`{ projects { name } }`, nil).ok(t)
		for _, p := range r.Data["projects"].([]any) {
			require.NotEqual(t, "from elsewhere", p.(map[string]any)["name"], "nothing was created")
		}
	})

	t.Run("NothingButSigningInWithoutCredentials", func(t *testing.T) {
		for _, q := range []string{
			`{ files { nodes { id } } }`,
			`query { invitation(token: "x") { email } files { nodes { id } } }`,
			`mutation { signIn(email: "a@b.c", password: "x") { role } createProject(input: {name: "x"}) { id } }`,
			`query { ...F } fragment F on Query { invitation(token: "x") { email } }`,
			`{ __schema { types { name } } }`,
		} {
			r := b.anonymous(q, nil)
			require.Equal(t, 401, r.status, "%s: %s", q, r.raw)
			require.Equal(t, "missing_credentials", r.code(t), q)
			require.Nil(t, r.Data)
		}
		r := b.anonymous(`query { invitation(token: "fmi_nope") { email } }`, nil).ok(t)
		require.Nil(t, r.Data["invitation"])
		// The console's client sends queries as GET: the same fields, and only they.
		for q, code := range map[string]string{`{ invitation(token: "fmi_nope") { email } }`: "", `{ files { nodes { id } } }`: "missing_credentials"} {
			req, err := http.NewRequest("GET", b.srv.URL+"/graphql?query="+url.QueryEscape(q), nil)
			require.NoError(t, err)
			r := b.send(req)
			if code == "" {
				r.ok(t)
			} else {
				require.Equal(t, code, r.code(t))
			}
		}
	})

	t.Run("SignOut", func(t *testing.T) {
		other := b.signIn("ada@example.com")
		r := br.gql(`{ sessions { id current } }`, nil).ok(t)
		require.Len(t, r.Data["sessions"], 2)
		r = br.gql(`mutation { signOut { id } }`, nil).ok(t)
		var cleared []string
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.MaxAge < 0 {
				cleared = append(cleared, c.Name)
			}
		}
		require.ElementsMatch(t, []string{door.SessionCookie, door.CSRFCookie}, cleared)
		r = br.gql(`{ viewer { role } }`, nil)
		require.Equal(t, 401, r.status)
		require.Equal(t, "invalid_session", r.code(t))
		other.gql(`{ viewer { role } }`, nil).ok(t)
		// A stale cookie does not stand in the way of signing in again.
		r = br.request(signInMutation, map[string]any{"e": "ada@example.com", "p": consolePassword},
			map[string]string{"Origin": b.srv.URL}).ok(t)
		b.browserOf(r).gql(`{ viewer { role } }`, nil).ok(t)
	})
}

// TestConsoleSignInLimits: failures lock an email, an account's or not, with one
// answer; attempts from one address are limited on their own.
func TestConsoleSignInLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) {
		c.SignInMaxFailures = 3
		c.SignInPerIP = 8
	}})
	b.person("ada@example.com", domain.RoleViewer)
	for _, email := range []string{"ada@example.com", "nobody@example.com"} {
		var codes []string
		for range 3 {
			codes = append(codes, b.anonymous(signInMutation, map[string]any{"e": email, "p": "not the password"}).code(t))
		}
		require.Equal(t, []string{"invalid_credentials", "invalid_credentials", "sign_in_locked"}, codes, email)
		r := b.anonymous(signInMutation, map[string]any{"e": email, "p": consolePassword})
		require.Nil(t, r.Data)
		require.Equal(t, "sign_in_locked", r.code(t), "locked even with the right password")
		// Until the lock ends, 15 minutes after the failure that set it.
		require.InDelta(t, 900, r.Errors[0].Extensions["retryAfter"], 30)
	}
	r := b.anonymous(signInMutation, map[string]any{"e": "third@example.com", "p": "not the password"})
	require.Equal(t, "rate_limited", r.code(t), "the address's ninth attempt this minute")
}

// TestViewerIsRefusedEveryMutation: a viewer, invited and signed in, is refused every
// mutation that changes the organization's data, by the same rule as a key without
// the scope; what is left is its own account (and minting download URLs, a read).
// Every mutation of the schema is listed here, so a new one must say where it stands.
func TestViewerIsRefusedEveryMutation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.person("owner@example.com", domain.RoleOwner)
	owner := b.signIn("owner@example.com")
	r := owner.gql(`mutation { createInvitation(email: "viewer@example.com", role: viewer) { path token invitation { id role } } }`, nil).ok(t)
	inv := field(r, "createInvitation")
	require.True(t, strings.HasPrefix(inv["path"].(string), "/console/invitation#token=fmi_"))
	r = b.anonymous(`query($t: String!) { invitation(token: $t) { email role hasAccount organization { name } } }`, map[string]any{"t": inv["token"]}).ok(t)
	require.Equal(t, "viewer", field(r, "invitation")["role"])
	r = b.anonymous(`mutation($t: String!, $p: String!) { acceptInvitation(token: $t, password: $p) { role csrfToken } }`,
		map[string]any{"t": inv["token"], "p": consolePassword}).ok(t)
	viewer := b.browserOf(r)
	ownerMember := ""
	r = owner.gql(`{ members { id email role } }`, nil).ok(t)
	for _, m := range r.Data["members"].([]any) {
		if m.(map[string]any)["email"] == "owner@example.com" {
			ownerMember = m.(map[string]any)["id"].(string)
		}
	}
	f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 8, 8))
	fileID := f["id"].(string)
	r = owner.gql(`mutation { createWebhookEndpoint(input: {url: "https://hooks.example.com/x", enabledEvents: ["job.succeeded"]}) { webhookEndpoint { id } } }`, nil).ok(t)
	ep := field(r, "createWebhookEndpoint")["webhookEndpoint"].(map[string]any)["id"].(string)
	r = owner.gql(`mutation { createJob(input: {fileId: "`+fileID+`", operation: "inspect"}) { id } }`, nil).ok(t)
	job := field(r, "createJob")["id"].(string)
	fakeID := func(prefix string) string { return domain.NewID(prefix) }

	refused := map[string]string{
		"createUpload":           `mutation { createUpload(input: {filename: "x.png", byteSize: 10}) { upload { id } } }`,
		"completeFile":           `mutation { completeFile(id: "` + fileID + `") { id } }`,
		"completeParts":          `mutation { completeParts(uploadId: "` + fakeID(domain.PrefixUpload) + `", parts: [{partNumber: 1, etag: "x"}]) { id } }`,
		"abortUpload":            `mutation { abortUpload(uploadId: "` + fakeID(domain.PrefixUpload) + `") { id } }`,
		"remintParts":            `mutation { remintParts(uploadId: "` + fakeID(domain.PrefixUpload) + `") { id } }`,
		"deleteFile":             `mutation { deleteFile(id: "` + fileID + `") { id } }`,
		"createJob":              `mutation { createJob(input: {fileId: "` + fileID + `", operation: "inspect"}) { id } }`,
		"cancelJob":              `mutation { cancelJob(id: "` + job + `") { id } }`,
		"createBatch":            `mutation { createBatch(input: {fileIds: ["` + fileID + `"], operation: "inspect"}) { id } }`,
		"createWebhookEndpoint":  `mutation { createWebhookEndpoint(input: {url: "https://hooks.example.com/y", enabledEvents: ["job.failed"]}) { secret } }`,
		"deleteWebhookEndpoint":  `mutation { deleteWebhookEndpoint(id: "` + ep + `") { id } }`,
		"testWebhookEndpoint":    `mutation { testWebhookEndpoint(id: "` + ep + `") { id } }`,
		"rotateWebhookSecret":    `mutation { rotateWebhookSecret(id: "` + ep + `") { secret } }`,
		"retryDelivery":          `mutation { retryDelivery(webhookEndpointId: "` + ep + `", deliveryId: "` + fakeID(domain.PrefixDelivery) + `") { id } }`,
		"sendTestEvent":          `mutation { sendTestEvent(webhookEndpointId: "` + ep + `") { id } }`,
		"enableWebhookEndpoint":  `mutation { enableWebhookEndpoint(id: "` + ep + `") { id } }`,
		"disableWebhookEndpoint": `mutation { disableWebhookEndpoint(id: "` + ep + `") { id } }`,
		"createProject":          `mutation { createProject(input: {name: "viewer's"}) { id } }`,
		"updateProject":          `mutation { updateProject(id: "` + b.orgA.Project.ID + `", input: {concurrencyLimit: 1}) { id } }`,
		"createApiKey":           `mutation { createApiKey(input: {name: "viewer's", scopes: ["files:read"]}) { secret } }`,
		"revokeApiKey":           `mutation { revokeApiKey(id: "` + b.orgA.LiveKey.ID + `") { id } }`,
		"createInvitation":       `mutation { createInvitation(email: "more@example.com", role: viewer) { token } }`,
		"revokeInvitation":       `mutation { revokeInvitation(id: "` + inv["invitation"].(map[string]any)["id"].(string) + `") { id } }`,
		"updateMember":           `mutation { updateMember(id: "` + ownerMember + `", role: viewer) { id } }`,
		"removeMember":           `mutation { removeMember(id: "` + ownerMember + `") { id } }`,
	}
	// What a viewer may do: its own account, and reading (a download URL is a read).
	allowed := []string{"signIn", "setPassword", "acceptInvitation", "signOut", "signOutEverywhere", "revokeSession",
		"changePassword", "createDownloadUrl"}

	r = owner.gql(`{ __schema { mutationType { fields { name } } } }`, nil).ok(t)
	var all []string
	for _, f := range r.Data["__schema"].(map[string]any)["mutationType"].(map[string]any)["fields"].([]any) {
		all = append(all, f.(map[string]any)["name"].(string))
	}
	var listed []string
	for name := range refused {
		listed = append(listed, name)
	}
	listed = append(listed, allowed...)
	require.ElementsMatch(t, all, listed, "every mutation is either refused to a viewer or allowed on purpose")

	for name, q := range refused {
		r := viewer.gql(q, nil)
		require.Len(t, r.Errors, 1, "%s: %s", name, r.raw)
		require.Equal(t, "insufficient_scope", r.code(t), "%s: %s", name, r.raw)
		require.Nil(t, r.Data, name)
	}
	// Nothing changed: the owner's endpoint, job, project and membership are as they were.
	r = owner.gql(`{ webhookEndpoint(id: "`+ep+`") { status } job(id: "`+job+`") { state } members { role } projects { name concurrencyLimit } }`, nil).ok(t)
	require.Equal(t, "enabled", field(r, "webhookEndpoint")["status"])
	require.Equal(t, "queued", field(r, "job")["state"])
	require.Len(t, r.Data["projects"], 1)
	require.EqualValues(t, 0, r.Data["projects"].([]any)[0].(map[string]any)["concurrencyLimit"])
	roles := []string{}
	for _, m := range r.Data["members"].([]any) {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	slices.Sort(roles)
	require.Equal(t, []string{"owner", "viewer"}, roles)

	// The same rule as a key without the scope.
	readOnly := b.key(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeFilesRead, domain.ScopeJobsRead} })
	require.Equal(t, "insufficient_scope", b.gql(readOnly, refused["createJob"], nil).code(t))
}

// TestConsoleWebsocket: a session's websocket is authenticated by its cookie only from
// the console's own origin, with the CSRF token in connection_init, and ends when the
// session does.
func TestConsoleWebsocket(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) { c.KeyRecheck = 200 * time.Millisecond }})
	b.person("ada@example.com", domain.RoleDeveloper)
	br := b.signIn("ada@example.com")
	cookie := (&http.Cookie{Name: door.SessionCookie, Value: br.session}).String()
	const viewer = `query { viewer { user { email } } }`

	c, err := b.dial(graphtest.TransportWS, http.Header{"Cookie": {cookie}, "Origin": {b.srv.URL}}, map[string]any{"csrfToken": br.csrf})
	require.NoError(t, err)
	_, ch, err := c.Subscribe(viewer, nil)
	require.NoError(t, err)
	res, ok := next(t, ch)
	require.True(t, ok)
	require.Empty(t, res.Errors)
	require.Equal(t, "ada@example.com", res.Data["viewer"].(map[string]any)["user"].(map[string]any)["email"])

	_, err = b.dial(graphtest.TransportWS, http.Header{"Cookie": {cookie}, "Origin": {b.srv.URL}}, nil)
	require.ErrorContains(t, err, "4403", "the CSRF token is required")
	_, err = b.dial(graphtest.TransportWS, http.Header{"Cookie": {cookie}, "Origin": {"https://evil.example"}}, map[string]any{"csrfToken": br.csrf})
	require.ErrorContains(t, err, "4403", "from another origin the cookie does not count")
	_, err = b.dial(graphtest.TransportWS, http.Header{"Cookie": {cookie}}, map[string]any{"csrfToken": br.csrf})
	require.ErrorContains(t, err, "4403", "nor without an Origin")

	// Signing out ends the connection.
	br.gql(`mutation { signOut { id } }`, nil).ok(t)
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection outlived its session")
	}
}

// TestConsoleManagement: projects, keys (restricted, the secret shown once, then only
// masked, revoked), members and invitations through GraphQL, for a session with the
// role and for a key that lists the manage scope alike.
func TestConsoleManagement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.person("owner@example.com", domain.RoleOwner)
	br := b.signIn("owner@example.com")

	r := br.gql(`mutation { createProject(input: {name: "reports", concurrencyLimit: 3}) { id name concurrencyLimit } }`, nil).ok(t)
	prj := field(r, "createProject")
	require.EqualValues(t, 3, prj["concurrencyLimit"])
	r = br.gql(`mutation($id: ID!) { updateProject(id: $id, input: {name: "monthly reports", concurrencyLimit: 0}) { name concurrencyLimit } }`,
		map[string]any{"id": prj["id"]}).ok(t)
	require.Equal(t, "monthly reports", field(r, "updateProject")["name"])
	require.Equal(t, "conflict", br.gql(`mutation { createProject(input: {name: "main"}) { id } }`, nil).code(t))

	r = br.gql(`mutation($p: ID!) { createApiKey(input: {name: "ci", environment: test, projectId: $p, scopes: ["files:read", "jobs:write"],
		ipAllowList: ["10.0.0.0/8"], spendLimit: 500, allowedOperations: ["inspect"], allowedProjects: [$p], expiresAt: "2999-01-01T00:00:00Z"}) {
		secret apiKey { id masked environment projectId scopes ipAllowList spendLimit allowedOperations allowedProjects expiresAt lastUsedAt } } }`,
		map[string]any{"p": prj["id"]}).ok(t)
	created := field(r, "createApiKey")
	secret := created["secret"].(string)
	key := created["apiKey"].(map[string]any)
	require.True(t, strings.HasPrefix(secret, "fm_test_"))
	require.Equal(t, secret[:12]+"…", key["masked"])
	require.Equal(t, []any{"10.0.0.0/8"}, key["ipAllowList"])
	require.Nil(t, key["lastUsedAt"])
	r = br.gql(`{ apiKeys(first: 10) { nodes { id masked revokedAt } } }`, nil).ok(t)
	require.NotContains(t, string(r.raw), secret, "the secret is shown once")
	require.Len(t, r.Data["apiKeys"].(map[string]any)["nodes"], 3)
	require.Equal(t, key["id"], r.Data["apiKeys"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["id"], "newest first")
	require.Equal(t, "ip_not_allowed", b.gql(secret, `{ viewer { environment } }`, nil).code(t), "its restrictions hold")
	r = br.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`, map[string]any{"id": key["id"]}).ok(t)
	require.NotNil(t, field(r, "revokeApiKey")["revokedAt"])

	// A key that lists manage manages as an admin does; one that lists nothing cannot.
	require.Equal(t, "insufficient_scope", b.gql(b.liveA, `{ members { id } }`, nil).code(t))
	manager := b.key(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeManage, domain.ScopeFilesRead} })
	r = b.gql(manager, `{ members { email role } apiKeys { nodes { lastUsedAt } } }`, nil).ok(t)
	require.Equal(t, "owner@example.com", r.Data["members"].([]any)[0].(map[string]any)["email"])
	r = b.gql(manager, `mutation { createInvitation(email: "dev@example.com", role: developer) { token invitation { id email role expiresAt } } }`, nil).ok(t)
	token := field(r, "createInvitation")["token"].(string)
	require.Equal(t, "insufficient_scope", b.gql(manager, `mutation { createInvitation(email: "o@example.com", role: owner) { token } }`, nil).code(t))
	require.Equal(t, "insufficient_scope", b.gql(manager, `mutation { createApiKey(input: {name: "x", scopes: ["jobs:write"]}) { secret } }`, nil).code(t),
		"no key gets a scope its maker lacks")
	r = br.gql(`{ invitations { email role } }`, nil).ok(t)
	require.Equal(t, []any{map[string]any{"email": "dev@example.com", "role": "developer"}}, r.Data["invitations"])
	r = b.anonymous(`mutation($t: String!) { acceptInvitation(token: $t, password: "a fine password") { role } }`, map[string]any{"t": token}).ok(t)
	dev := b.browserOf(r)

	// Roles are the owner's; the last owner stays.
	r = br.gql(`{ members { id email } }`, nil).ok(t)
	var devMember string
	for _, m := range r.Data["members"].([]any) {
		if m.(map[string]any)["email"] == "dev@example.com" {
			devMember = m.(map[string]any)["id"].(string)
		}
	}
	require.Equal(t, "insufficient_scope", b.gql(manager, `mutation($id: ID!) { updateMember(id: $id, role: admin) { role } }`, map[string]any{"id": devMember}).code(t))
	r = br.gql(`mutation($id: ID!) { updateMember(id: $id, role: admin) { role } }`, map[string]any{"id": devMember}).ok(t)
	require.Equal(t, "admin", field(r, "updateMember")["role"])
	r = dev.gql(`{ viewer { role } }`, nil).ok(t)
	require.Equal(t, "admin", field(r, "viewer")["role"], "a new role holds at once")
	r = br.gql(`mutation($id: ID!) { removeMember(id: $id) { id } }`, map[string]any{"id": owner.Membership.ID})
	require.Equal(t, "conflict", r.code(t), "the last owner cannot leave")
	r = br.gql(`mutation($id: ID!) { updateMember(id: $id, role: viewer) { id } }`, map[string]any{"id": owner.Membership.ID})
	require.Equal(t, "conflict", r.code(t))
	dev.gql(`mutation($id: ID!) { removeMember(id: $id) { id } }`, map[string]any{"id": devMember}).ok(t)
	require.Equal(t, "invalid_session", dev.gql(`{ viewer { role } }`, nil).code(t), "who leaves is signed out")
}

// TestConsoleUsageEstimateAndTestEvents: the estimate is what creating the job
// reserves; the usage series counts the job on its day; a test event is a delivery to
// its endpoint only, recorded with the others and never among the events; endpoints
// are disabled and enabled.
func TestConsoleUsageEstimateAndTestEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.person("dev@example.com", domain.RoleDeveloper)
	br := b.signIn("dev@example.com")
	f := b.uploadREST(b.liveA, "long.txt", longText(200<<10))

	r := br.gql(`query($f: ID!) { estimateJob(input: {fileIds: [$f], operation: "inspect"}) { credits estimated files { fileId pricing { credits lines { operation units } } } } }`,
		map[string]any{"f": f["id"]}).ok(t)
	est := field(r, "estimateJob")
	require.Equal(t, f["id"], est["files"].([]any)[0].(map[string]any)["fileId"])
	require.Equal(t, "unsupported_operation", br.gql(`query($f: ID!) { estimateJob(input: {fileIds: [$f], operation: "nope"}) { credits } }`,
		map[string]any{"f": f["id"]}).code(t))
	require.Equal(t, "not_found", br.gql(`query { estimateJob(input: {fileIds: ["`+domain.NewID(domain.PrefixFile)+`"], operation: "inspect"}) { credits } }`, nil).code(t))

	r = br.gql(`mutation($f: ID!) { createJob(input: {fileId: $f, operation: "inspect"}) { id creditsReserved } }`, map[string]any{"f": f["id"]}).ok(t)
	job := field(r, "createJob")
	require.Equal(t, est["credits"], job["creditsReserved"], "the estimate is the reservation")
	c, err := b.dial(graphtest.TransportWS, nil, map[string]any{"authorization": "Bearer " + b.liveA})
	require.NoError(t, err)
	_, ch, err := c.Subscribe(jobSub, map[string]any{"id": job["id"]})
	require.NoError(t, err)
	b.startWorker()
	states := graphtest.Drain(t, ch, "jobUpdated")
	require.Equal(t, "succeeded", states[len(states)-1]["state"])
	b.gql(b.liveA, `mutation($f: ID!) { createDownloadUrl(fileId: $f) { url } }`, map[string]any{"f": f["id"]}).ok(t)

	today := time.Now().UTC().Format(time.DateOnly)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	r = br.gql(`query($from: String!, $to: String!) { usageSeries(from: $from, to: $to) { projectId from to
		days { date credits jobs uploadedBytes egressBytes } operations { operation jobs credits } } }`,
		map[string]any{"from": yesterday, "to": today}).ok(t)
	u := field(r, "usageSeries")
	days := u["days"].([]any)
	require.Len(t, days, 2)
	require.Equal(t, map[string]any{"date": yesterday, "credits": 0.0, "jobs": 0.0, "uploadedBytes": 0.0, "egressBytes": 0.0}, days[0])
	d := days[1].(map[string]any)
	require.Equal(t, today, d["date"])
	require.Equal(t, est["credits"], d["credits"])
	require.EqualValues(t, 1, d["jobs"])
	require.EqualValues(t, 200<<10, d["uploadedBytes"])
	require.Positive(t, d["egressBytes"])
	require.Equal(t, []any{map[string]any{"operation": "inspect", "jobs": 1.0, "credits": est["credits"]}}, u["operations"])
	require.Equal(t, "invalid_request", br.gql(`{ usageSeries(from: "2026-02-01", to: "2026-01-01") { projectId } }`, nil).code(t))
	require.Equal(t, "invalid_request", br.gql(`{ usageSeries(from: "2020-01-01", to: "2026-01-01") { projectId } }`, nil).code(t))

	r = br.gql(`mutation { createWebhookEndpoint(input: {url: "https://hooks.example.com/x", enabledEvents: ["job.succeeded"]}) { webhookEndpoint { id } } }`, nil).ok(t)
	ep := field(r, "createWebhookEndpoint")["webhookEndpoint"].(map[string]any)["id"].(string)
	r = br.gql(`mutation($id: ID!) { sendTestEvent(webhookEndpointId: $id) { id eventType status webhookEndpointId } }`, map[string]any{"id": ep}).ok(t)
	dl := field(r, "sendTestEvent")
	require.Equal(t, "webhook.test", dl["eventType"])
	require.Equal(t, ep, dl["webhookEndpointId"])
	r = br.gql(`query($id: ID!) { webhookEndpoint(id: $id) { deliveries { nodes { id eventType } } } events { nodes { type } } }`, map[string]any{"id": ep}).ok(t)
	require.Equal(t, dl["id"], field(r, "webhookEndpoint")["deliveries"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["id"])
	for _, e := range field(r, "events")["nodes"].([]any) {
		require.NotEqual(t, "webhook.test", e.(map[string]any)["type"], "the ping is no event of the project's")
	}

	r = br.gql(`mutation($id: ID!) { disableWebhookEndpoint(id: $id) { status disabledReason } }`, map[string]any{"id": ep}).ok(t)
	require.Equal(t, "disabled", field(r, "disableWebhookEndpoint")["status"])
	require.Equal(t, "disabled by dev@example.com", field(r, "disableWebhookEndpoint")["disabledReason"])
	require.Equal(t, "conflict", br.gql(`mutation($id: ID!) { sendTestEvent(webhookEndpointId: $id) { id } }`, map[string]any{"id": ep}).code(t))
	r = br.gql(`mutation($id: ID!) { enableWebhookEndpoint(id: $id) { status disabledReason } }`, map[string]any{"id": ep}).ok(t)
	require.Equal(t, map[string]any{"status": "enabled", "disabledReason": nil}, field(r, "enableWebhookEndpoint"))
}
