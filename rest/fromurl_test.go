package rest_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/storage/fetch"
)

// remote is an HTTPS server on loopback standing in for a public file host.
func remote(t *testing.T, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	pdf := []byte(minimalPDF)
	mux := http.NewServeMux()
	mux.HandleFunc("/doc.pdf", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(pdf)
	})
	mux.HandleFunc("/liar.pdf", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(pngBytes(t, 8, 8))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/doc.pdf", http.StatusFound)
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFromURL(t *testing.T) {
	t.Parallel()

	t.Run("AllowedNetworkCompletesTheFile", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int32
		srv := remote(t, &hits)
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		f := fetch.New(fetch.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots})
		b := setup(t, setupOpts{fetcher: f})
		r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: map[string]any{"from_url": srv.URL + "/doc.pdf"}})
		require.Equal(t, 200, r.status, string(r.body))
		file := r.json(t)
		require.Equal(t, "file", file["object"])
		require.Equal(t, "ready", file["status"])
		require.Equal(t, "doc.pdf", file["filename"])
		require.EqualValues(t, len(minimalPDF), file["byte_size"])
		require.Equal(t, "pdf", file["detected_format"].(map[string]any)["extension"])
		_, err := b.blobs.Stat(context.Background(), b.fileKey(file["id"].(string)))
		require.NoError(t, err)

		// The policy is judged on the fetched bytes, whatever the remote claims.
		r = b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(),
			body: map[string]any{"from_url": srv.URL + "/liar.pdf", "validation": map[string]any{"formats": []string{"pdf"}}}})
		require.Equal(t, 422, r.status, string(r.body))
		require.Equal(t, domain.CodeValidationFailed, r.errorCode(t))

		// Redirects are refused even within the allowed network.
		r = b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: map[string]any{"from_url": srv.URL + "/moved"}})
		require.Equal(t, 400, r.status, string(r.body))
		require.Equal(t, domain.CodeInvalidRequest, r.errorCode(t))
		require.Contains(t, r.json(t)["error"].(map[string]any)["message"], "redirect")
	})

	t.Run("RefusedByDefault", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int32
		srv := remote(t, &hits)
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		b := setup(t, setupOpts{fetcher: fetch.New(fetch.Config{RootCAs: roots})})
		for _, u := range []string{
			srv.URL + "/doc.pdf",                        // loopback
			"https://2130706433/doc.pdf",                // loopback, decimal
			"https://0x7f.0.0.1/doc.pdf",                // loopback, hex
			"https://0177.0.0.1/doc.pdf",                // loopback, octal
			"https://[::ffff:127.0.0.1]/doc.pdf",        // IPv4-mapped IPv6
			"https://10.1.2.3/doc.pdf",                  // private
			"https://192.168.0.1/doc.pdf",               // private
			"https://169.254.169.254/latest/meta-data/", // link-local, cloud metadata
			"https://[fe80::1]/doc.pdf",                 // link-local IPv6
			"https://0.0.0.0/doc.pdf",                   // unspecified
			"https://localhost/doc.pdf",                 // a name resolving to loopback
		} {
			r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: map[string]any{"from_url": u}})
			require.Equal(t, 400, r.status, "%s: %s", u, r.body)
			e := r.json(t)["error"].(map[string]any)
			require.Equal(t, domain.CodeInvalidRequest, e["code"], u)
			require.Equal(t, "from_url", e["param"], u)
		}
		require.Zero(t, hits.Load(), "no refused request reached the server")
		l := b.do(req{method: "GET", path: "/v1/files", key: b.liveA}).json(t)
		require.Empty(t, l["data"], "a refused fetch leaves no file behind")
	})
}
