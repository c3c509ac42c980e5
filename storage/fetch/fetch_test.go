package fetch

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// Everything here runs on loopback: there is no outside network, and the public
// addresses below are only vetted, never connected to.

type bundle struct {
	srv  *httptest.Server
	port string
	pool *x509.CertPool
	stop chan struct{} // closed at cleanup, releasing handlers that stall
}

// setup starts a TLS server on 127.0.0.1 whose certificate is valid for 127.0.0.1 and
// example.com.
func setup(t *testing.T, h http.HandlerFunc) *bundle {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	b := &bundle{srv: srv, stop: make(chan struct{})}
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(b.stop) }) // runs first: Close waits for handlers
	b.pool = x509.NewCertPool()
	b.pool.AddCert(srv.Certificate())
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	b.port = u.Port()
	return b
}

// fetcher trusts the test server's certificate and allows loopback unless mut says
// otherwise.
func (b *bundle) fetcher(mut func(*Config)) *Fetcher {
	cfg := DefaultConfig()
	cfg.RootCAs = b.pool
	cfg.AllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	if mut != nil {
		mut(&cfg)
	}
	return New(cfg)
}

// stall blocks a handler until the test ends or the client goes away, or 10 s pass, so
// a fetcher that fails to cut it fails the test rather than hanging it.
func (b *bundle) stall(r *http.Request) {
	select {
	case <-b.stop:
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func requireCode(t *testing.T, err error, code string) *domain.Error {
	t.Helper()
	require.Error(t, err)
	de := domain.AsError(err)
	require.NotNil(t, de, "want a *domain.Error, got %v", err)
	require.Equal(t, code, de.Code, de.Message)
	require.Equal(t, "from_url", de.Param)
	return de
}

type fakeResolver struct {
	hosts map[string][]netip.Addr
	calls atomic.Int32
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	if a, ok := r.hosts[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func mustPort(t *testing.T, s string) uint16 {
	t.Helper()
	ap, err := netip.ParseAddrPort("127.0.0.1:" + s)
	require.NoError(t, err)
	return ap.Port()
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestFetch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("RefusesLoopbackByDefault", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int32
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
		f := b.fetcher(func(c *Config) { c.AllowCIDRs = nil })
		_, err := f.Fetch(ctx, b.srv.URL+"/x", 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "loopback")
		require.Zero(t, hits.Load())
	})

	t.Run("RefusesOddEncodingsOfLoopback", func(t *testing.T) {
		t.Parallel()
		f := New(DefaultConfig())
		for _, h := range []string{"2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "0x7f000001", "017700000001",
			"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::1]", "127.0.0.1."} {
			_, err := f.Fetch(ctx, "https://"+h+"/", 1<<20)
			de := requireCode(t, err, domain.CodeInvalidRequest)
			require.Contains(t, de.Message, "loopback", h)
		}
	})

	t.Run("RefusesPrivateAndMetadata", func(t *testing.T) {
		t.Parallel()
		f := New(DefaultConfig())
		for h, reason := range map[string]string{"169.254.169.254": "link-local", "10.0.0.1": "private",
			"[fd00::1]": "private", "0": "unspecified", "[64:ff9b::a00:1]": "private", "100.64.0.1": "shared"} {
			_, err := f.Fetch(ctx, "https://"+h+"/latest/meta-data/", 1<<20)
			de := requireCode(t, err, domain.CodeInvalidRequest)
			require.Contains(t, de.Message, reason, h)
		}
	})

	t.Run("RefusesBadURLs", func(t *testing.T) {
		t.Parallel()
		f := New(DefaultConfig())
		for raw, msg := range map[string]string{
			"http://93.184.216.34/a":       "https",
			"ftp://example.com/a":          "https",
			"https://user:pw@example.com/": "user name",
			"https:///path":                "host",
			"https:example.com":            "host",
			"https://[fe80::1%25eth0]/":    "zone",
			"https://example.com:0/":       "port",
			"https://1.2.3.4.5/":           "not a valid IP",
			"https://example.123/":         "not a valid IP",
			"https://exa mple.com/":        "valid",
			"https://bücher.example/":      "xn--",
			"%":                            "valid URL",
		} {
			_, err := f.Fetch(ctx, raw, 1<<20)
			de := requireCode(t, err, domain.CodeInvalidRequest)
			require.Contains(t, de.Message, msg, raw)
		}
	})

	t.Run("RefusesNameResolvingToLoopback", func(t *testing.T) {
		t.Parallel()
		_, err := New(DefaultConfig()).Fetch(ctx, "https://localhost/", 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "resolves to a loopback address")
		require.NotContains(t, de.Message, "127.0.0.1") // what our DNS says stays ours
	})

	t.Run("RefusesWhenAnyResolvedAddressIsPrivate", func(t *testing.T) {
		t.Parallel()
		r := &fakeResolver{hosts: map[string][]netip.Addr{"mixed.test": addrs("93.184.216.34", "10.0.0.7")}}
		cfg := DefaultConfig()
		cfg.Resolver = r
		_, err := New(cfg).Fetch(ctx, "https://mixed.test/", 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "resolves to a private address")
		require.NotContains(t, de.Message, "10.0.0.7")
	})

	t.Run("AllowedNetworkStreamsBytes", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var fetched chan struct{} // closed once Fetch has returned
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			require.Equal(t, "filemill-test", r.Header.Get("User-Agent"))
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Length", "10")
			_, _ = io.WriteString(w, "hello")
			w.(http.Flusher).Flush()
			mu.Lock()
			wait := fetched
			mu.Unlock()
			select { // the rest comes after Fetch has returned
			case <-wait:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "world")
		})
		f := b.fetcher(func(c *Config) { c.UserAgent = "filemill-test" })
		for _, host := range []string{"127.0.0.1", "0x7f.1", "2130706433"} {
			mu.Lock()
			fetched = make(chan struct{})
			mu.Unlock()
			res, err := f.Fetch(ctx, "https://"+host+":"+b.port+"/docs/My%20Report.pdf?x=1#frag", 1<<20)
			require.NoError(t, err, host)
			close(fetched)
			got, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			require.Equal(t, "helloworld", string(got))
			require.Equal(t, int64(10), res.Size)
			require.Equal(t, "application/pdf", res.ContentType)
			require.Equal(t, "My Report.pdf", res.Filename)
		}
	})

	t.Run("DialsTheVettedAddressAndVerifiesTheName", func(t *testing.T) {
		t.Parallel()
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) {
			require.Equal(t, "example.com:"+b.port, r.Host)
			_, _ = io.WriteString(w, "ok")
		})
		// example.com cannot be resolved here: only the resolver's answer can be dialled.
		// The certificate is valid for example.com, so TLS checks the name, not the IP.
		r := &fakeResolver{hosts: map[string][]netip.Addr{"example.com": addrs("::ffff:127.0.0.1")}}
		f := b.fetcher(func(c *Config) { c.Resolver = r })
		res, err := f.Fetch(ctx, "https://example.com:"+b.port+"/", 1<<20)
		require.NoError(t, err)
		got, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, "ok", string(got))
		require.Equal(t, int32(1), r.calls.Load(), "resolved exactly once: nothing can rebind")
		require.Equal(t, "download", res.Filename)

		// A name the certificate does not cover fails verification although it reaches
		// the same server.
		r.hosts["other.test"] = addrs("127.0.0.1")
		_, err = f.Fetch(ctx, "https://other.test:"+b.port+"/", 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "certificate")
	})

	t.Run("RefusesUntrustedCertificate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
		f := b.fetcher(func(c *Config) { c.RootCAs = x509.NewCertPool() })
		_, err := f.Fetch(ctx, b.srv.URL, 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "trusted authority")
	})

	t.Run("ConnectionRefusedEchoesNoAddress", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
		port := b.port
		b.srv.Close()
		r := &fakeResolver{hosts: map[string][]netip.Addr{"files.test": addrs("127.0.0.1")}}
		_, err := b.fetcher(func(c *Config) { c.Resolver = r }).Fetch(ctx, "https://files.test:"+port+"/", 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "refused the connection")
		require.NotContains(t, de.Message, "127.0.0.1")
	})

	t.Run("RefusesRedirects", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
		})
		_, err := b.fetcher(nil).Fetch(ctx, b.srv.URL+"/go", 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "redirects are not followed")
		require.Contains(t, de.Message, "302")
		require.Contains(t, de.Message, "https://169.254.169.254/latest/meta-data/")
	})

	t.Run("RefusesNon2xx", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
		_, err := b.fetcher(nil).Fetch(ctx, b.srv.URL, 1<<20)
		de := requireCode(t, err, domain.CodeInvalidRequest)
		require.Contains(t, de.Message, "404 Not Found")
	})

	t.Run("RefusesContentLengthOverCap", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write(make([]byte, 1000))
		})
		_, err := b.fetcher(nil).Fetch(ctx, b.srv.URL, 999)
		de := requireCode(t, err, domain.CodeFileTooLarge)
		require.Contains(t, de.Message, "1000")
	})

	t.Run("ChunkedBodyOverCapFailsWhileReading", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			for range 10 {
				_, _ = w.Write(make([]byte, 100))
				w.(http.Flusher).Flush()
			}
		})
		f := b.fetcher(nil)
		res, err := f.Fetch(ctx, b.srv.URL, 999)
		require.NoError(t, err)
		require.Equal(t, int64(-1), res.Size)
		got, err := io.ReadAll(res.Body)
		requireCode(t, err, domain.CodeFileTooLarge)
		require.Len(t, got, 999)
		require.NoError(t, res.Body.Close())

		// Exactly at the cap is fine.
		res, err = f.Fetch(ctx, b.srv.URL, 1000)
		require.NoError(t, err)
		got, err = io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Len(t, got, 1000)
		require.NoError(t, res.Body.Close())
	})

	t.Run("StalledServerIsCutByIdleTimeout", func(t *testing.T) {
		t.Parallel()
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "start")
			w.(http.Flusher).Flush()
			b.stall(r)
		})
		f := b.fetcher(func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
		res, err := f.Fetch(ctx, b.srv.URL, 1<<20)
		require.NoError(t, err)
		defer res.Body.Close()
		begin := time.Now()
		got, err := io.ReadAll(res.Body)
		de := requireCode(t, err, domain.CodeTimeout)
		require.Contains(t, de.Message, "sent nothing")
		require.Equal(t, "start", string(got))
		require.Less(t, time.Since(begin), 5*time.Second)
	})

	t.Run("SlowReaderIsNotCutByIdleTimeout", func(t *testing.T) {
		t.Parallel()
		// The server sends a piece only when the caller asks for it, and the caller reads it
		// only once it is sent, so no read ever waits on the server: the one silence is the
		// caller's own, each longer than the idle timeout, and however slow the machine
		// makes either side, no deadline can run out unless one runs while nobody reads.
		const idle = 100 * time.Millisecond
		const pieces, piece = 3, 32 << 10
		ask, sent := make(chan struct{}), make(chan struct{})
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(pieces*piece))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for range pieces {
				select {
				case <-ask:
				case <-b.stop:
					return
				}
				_, _ = w.Write(make([]byte, piece))
				w.(http.Flusher).Flush()
				select {
				case sent <- struct{}{}:
				case <-b.stop:
					return
				}
			}
		})
		f := b.fetcher(func(c *Config) { c.IdleTimeout = idle })
		res, err := f.Fetch(ctx, b.srv.URL, pieces*piece)
		require.NoError(t, err)
		defer res.Body.Close()
		buf := make([]byte, piece)
		for i := range pieces {
			time.Sleep(2 * idle) // the stimulus, not a wait: the caller reads nothing for this long
			ask <- struct{}{}
			<-sent
			_, err := io.ReadFull(res.Body, buf)
			require.NoError(t, err, "piece %d", i)
		}
		n, err := res.Body.Read(buf)
		require.Zero(t, n)
		require.Equal(t, io.EOF, err)
	})

	t.Run("ClosingTheBodyEndsTheRequest", func(t *testing.T) {
		t.Parallel()
		gone := make(chan struct{})
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			b.stall(r)
			if r.Context().Err() != nil {
				close(gone)
			}
		})
		res, err := b.fetcher(nil).Fetch(ctx, b.srv.URL, 1<<20)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.NoError(t, res.Body.Close()) // twice is harmless
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the server still holds the request after Close")
		}
	})

	t.Run("SocketHookRefusesUnvettedAddress", func(t *testing.T) {
		t.Parallel()
		// Were the dialler ever handed an address that skipped vetting, the socket-level
		// hook would still refuse it.
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
		f := b.fetcher(func(c *Config) { c.AllowCIDRs = nil })
		u, err := url.Parse(b.srv.URL)
		require.NoError(t, err)
		tg := &target{url: u, host: "sneaky.test", addrs: addrs("127.0.0.1")}
		tg.port = mustPort(t, b.port)
		_, err = f.do(ctx, tg)
		require.Error(t, err)
		de := domain.AsError(f.transportError(ctx, ctx, tg, err))
		require.NotNil(t, de)
		require.Contains(t, de.Message, "resolves to a loopback address")
	})

	t.Run("TrickleIsCutByTotalTimeout", func(t *testing.T) {
		t.Parallel()
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) {
			for {
				select {
				case <-b.stop:
					return
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
				_, _ = io.WriteString(w, ".")
				w.(http.Flusher).Flush()
			}
		})
		// The total timeout must leave time for the headers, which a busy machine may
		// take long to send: when it did not, the fetch was cut before the body (a timeout
		// too), and the case is run again with twice the time.
		for total := 400 * time.Millisecond; ; total *= 2 {
			f := b.fetcher(func(c *Config) { c.TotalTimeout = total })
			res, err := f.Fetch(ctx, b.srv.URL, 1<<20)
			if err != nil {
				requireCode(t, err, domain.CodeTimeout)
				require.Less(t, total, 20*time.Second, "the headers never came in time")
				continue
			}
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
			de := requireCode(t, err, domain.CodeTimeout)
			require.Contains(t, de.Message, "took longer")
			break
		}
	})

	t.Run("SilentServerIsCutByHeaderTimeout", func(t *testing.T) {
		t.Parallel()
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) { b.stall(r) })
		f := b.fetcher(func(c *Config) { c.HeaderTimeout = 200 * time.Millisecond })
		_, err := f.Fetch(ctx, b.srv.URL, 1<<20)
		requireCode(t, err, domain.CodeTimeout)
	})

	t.Run("CallerCancellationIsNotARefusal", func(t *testing.T) {
		t.Parallel()
		var b *bundle
		b = setup(t, func(w http.ResponseWriter, r *http.Request) { b.stall(r) })
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := b.fetcher(nil).Fetch(cctx, b.srv.URL, 1<<20)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("FilenameFromContentDisposition", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Disposition", r.URL.Query().Get("cd"))
		})
		f := b.fetcher(nil)
		for cd, want := range map[string]string{
			`attachment; filename="../../etc/passwd"`:        "passwd",
			`attachment; filename="C:\\temp\\evil.exe"`:      "evil.exe",
			`attachment; filename*=UTF-8''na%C3%AFve%20.txt`: "naïve .txt",
			`attachment; filename=".."`:                      "x.bin",
			`inline`:                                         "x.bin",
		} {
			res, err := f.Fetch(ctx, b.srv.URL+"/dir/x.bin?cd="+url.QueryEscape(cd), 1<<20)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			require.Equal(t, want, res.Filename, cd)
		}
	})
}

func TestParseAllowCIDRs(t *testing.T) {
	t.Parallel()
	got, err := ParseAllowCIDRs("10.0.0.0/8, 192.168.1.7 fd00::/8,172.16.5.4/12")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("172.16.0.0/12"),
	}, got)
	got, err = ParseAllowCIDRs("")
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = ParseAllowCIDRs("10.0.0.0/33")
	require.ErrorContains(t, err, "FILEMILL_OUTBOUND_ALLOW_CIDRS")
	_, err = ParseAllowCIDRs("intranet")
	require.Error(t, err)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultConfig().Validate())
	cfg := DefaultConfig()
	cfg.IdleTimeout = -time.Second
	require.ErrorContains(t, cfg.Validate(), "IdleTimeout")
	cfg = DefaultConfig()
	cfg.AllowCIDRs = []netip.Prefix{{}}
	require.ErrorContains(t, cfg.Validate(), "FILEMILL_OUTBOUND_ALLOW_CIDRS")
}

// TestBodyCutByTheTotalTimeoutNeverReadsAsComplete hands the body a transport answer
// that ends cleanly after the request's time ran out, as a server that closes a chunked
// body once we hang up can make it: the read must fail, never look complete.
func TestBodyCutByTheTotalTimeoutNeverReadsAsComplete(t *testing.T) {
	t.Parallel()
	for name, parent := range map[string]context.Context{"Deadline": context.Background(), "CallerGone": canceled()} {
		rctx, cancel := context.WithDeadline(parent, time.Now().Add(-time.Second))
		b := &body{rc: io.NopCloser(strings.NewReader("partial")), max: 1 << 20, cancel: cancel, ctx: rctx, parent: parent,
			f: New(DefaultConfig())}
		got, err := io.ReadAll(b)
		require.Error(t, err, name)
		require.Equal(t, "partial", string(got), name)
		if name == "Deadline" {
			requireCode(t, err, domain.CodeTimeout)
		} else {
			require.ErrorIs(t, err, context.Canceled)
		}
		require.NoError(t, b.Close())
	}
	// In time, the same answer reads as complete.
	rctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b := &body{rc: io.NopCloser(strings.NewReader("whole")), max: 1 << 20, cancel: cancel, ctx: rctx, parent: context.Background(),
		f: New(DefaultConfig())}
	got, err := io.ReadAll(b)
	require.NoError(t, err)
	require.Equal(t, "whole", string(got))
	require.NoError(t, b.Close())
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
