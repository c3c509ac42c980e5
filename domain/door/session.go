package door

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/filemill/filemill/domain"
)

// The console's session as a door reads it off a request, in this one file: its
// cookies and headers, the proofs a cookie needs — the CSRF token on every request,
// and the console's own Origin on a websocket — and the cookies a sign-in sets. The
// rules (which session holds, what it may do) are domain.People's.

// Names of the session's cookies and headers.
const (
	// SessionCookie holds the session token: HttpOnly, SameSite=Lax, sent to /graphql only.
	SessionCookie = "filemill_session"
	// CSRFCookie holds the CSRF token for the console's script to repeat in CSRFHeader.
	CSRFCookie = "filemill_csrf"
	CSRFHeader = "X-CSRF-Token"
	// ProjectHeader and EnvironmentHeader choose what a session acts on (the
	// organization's first project and live by default); on a websocket,
	// connection_init's "project" and "environment".
	ProjectHeader     = "X-Filemill-Project"
	EnvironmentHeader = "X-Filemill-Environment"
)

// Sessions authenticates the console's session cookie. A request must repeat the
// session's CSRF token in CSRFHeader; a websocket counts its cookie only when its Origin
// is the console's own, and gives the CSRF token in connection_init.
type Sessions struct {
	People *domain.People
	// Origins are origins, besides the request's own host, whose pages are the
	// console's (its public URL, behind a proxy that rewrites Host).
	Origins []string
}

var _ InitAuthenticator = Sessions{}

// Authenticate reads the session cookie of a request; a websocket's is read at its
// connection_init (AuthenticateInit). Codes: forbidden (a request from another site),
// those of domain.People.Authenticate.
func (s Sessions) Authenticate(r *http.Request, ip netip.Addr) (*Identity, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || isSocket(r) {
		return nil, nil
	}
	if CrossSite(r, s.Origins) {
		return nil, CrossSiteRefused()
	}
	return s.session(r.Context(), domain.SessionRequest{Token: c.Value, CSRFToken: r.Header.Get(CSRFHeader),
		ProjectID: r.Header.Get(ProjectHeader), Environment: domain.Environment(r.Header.Get(EnvironmentHeader)), IP: ip})
}

// AuthenticateInit authenticates a websocket by the cookie of its upgrade, when the
// upgrade came from the console's own origin — a page of another site may open a
// websocket carrying our cookie, which then counts for nothing — with connection_init's
// {"csrfToken", "project", "environment"}. Codes: those of domain.People.Authenticate.
func (s Sessions) AuthenticateInit(ctx context.Context, payload map[string]any, ip netip.Addr) (*Identity, error) {
	r := upgradeOf(ctx)
	if r == nil {
		return nil, nil
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	if o := r.Header.Get("Origin"); o == "" || !SameOrigin(r, o, s.Origins) {
		return nil, nil
	}
	str := func(k string) string { v, _ := payload[k].(string); return v }
	return s.session(ctx, domain.SessionRequest{Token: c.Value, CSRFToken: str("csrfToken"), ProjectID: str("project"),
		Environment: domain.Environment(str("environment")), IP: ip})
}

func (s Sessions) session(ctx context.Context, req domain.SessionRequest) (*Identity, error) {
	p, err := s.People.Authenticate(ctx, req)
	if err != nil {
		return nil, err
	}
	return &Identity{Principal: p, Recheck: func(ctx context.Context) error {
		_, err := s.People.Authenticate(ctx, req)
		return err
	}}, nil
}

// CrossSite reports whether a browser says r comes from a page of another site: its
// Origin is not the console's, or Sec-Fetch-Site says cross-site. A request without
// either (not a browser's, or a same-origin GET) is not.
func CrossSite(r *http.Request, origins []string) bool {
	if o := r.Header.Get("Origin"); o != "" && !SameOrigin(r, o, origins) {
		return true
	}
	return r.Header.Get("Sec-Fetch-Site") == "cross-site"
}

// CrossSiteRefused is the refusal of a request from another site's page. Codes:
// forbidden.
func CrossSiteRefused() *domain.Error {
	return domain.Errorf(domain.CodeForbidden, "a cross-site request is refused: the console's requests come from its own origin")
}

// SameOrigin reports whether origin is the console's: the origin of the request's own
// host, or one of origins.
func SameOrigin(r *http.Request, origin string, origins []string) bool {
	for _, o := range origins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// SetSessionCookies sets the cookies of a new session on w: the token for /graphql only
// (HttpOnly), the CSRF token for the console's pages to read. secure marks them Secure.
func SetSessionCookies(w http.ResponseWriter, in *domain.SignedIn, secure bool) {
	maxAge := max(int(in.Session.ExpiresAt.Sub(in.Session.CreatedAt).Seconds()), 1)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: in.Token, Path: "/graphql", MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: CSRFCookie, Value: in.CSRFToken, Path: "/", MaxAge: maxAge,
		Secure: secure, SameSite: http.SameSiteLaxMode})
}

// ClearSessionCookies removes them.
func ClearSessionCookies(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/graphql", MaxAge: -1, HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: CSRFCookie, Value: "", Path: "/", MaxAge: -1, Secure: secure, SameSite: http.SameSiteLaxMode})
}

// SecureRequest reports whether r came over HTTPS, here or at a proxy in front that
// says so: a session's cookies are then Secure.
func SecureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
