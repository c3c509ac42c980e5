package listener_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/cmd/filemill/listener"
	"github.com/filemill/filemill/domain/eventually"
)

// serve runs h behind a listener with the limits of c on a loopback port and returns
// its address.
func serve(t *testing.T, c listener.Config, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	require.NoError(t, c.Validate())
	s := listener.New(ln, h, c)
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		require.NoError(t, <-done)
	})
	return s.Addr().String()
}

// handlers: /read reads the whole body and answers its length (400 when the read
// fails: the listener's 408 must take its place); anything else answers without
// reading the body, as a health check does.
func handlers() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	return mux
}

// safety bounds a test's wait for an answer that the limits under test must bring much
// sooner: a generous bound, not a measure.
const safety = 30 * time.Second

// slowRequest opens a connection and sends a POST to path announcing 100 bytes of body
// and sending one.
func slowRequest(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", path)
	require.NoError(t, err)
	return c
}

// readAnswer reads the answer on c, then the connection's end.
func readAnswer(t *testing.T, c net.Conn) (*http.Response, []byte) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(safety)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection after the answer")
	return resp, body
}

func requireCode(t *testing.T, body []byte, code string) {
	t.Helper()
	var e struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	require.Equal(t, code, e.Error.Code, string(body))
	require.NotEmpty(t, e.Error.Message)
	require.True(t, strings.HasPrefix(e.Error.RequestID, "req_"), string(body))
}

// A body that stops arriving is answered 408 request_timeout once the read timeout
// has passed, and its connection closed: whether the handler reads the body or not.
func TestSlowBodyIsAnswered408(t *testing.T) {
	t.Parallel()
	c := listener.DefaultConfig()
	c.BodyReadTimeout = 500 * time.Millisecond
	addr := serve(t, c, handlers())
	for _, path := range []string{"/read", "/healthz"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			sent := time.Now()
			conn := slowRequest(t, addr, path)
			resp, body := readAnswer(t, conn)
			took := time.Since(sent)
			require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
			requireCode(t, body, "request_timeout")
			require.True(t, resp.Close, "Connection: close")
			require.GreaterOrEqual(t, took, c.BodyReadTimeout, "not before the limit")
			// Answered at the limit; the slack is for a busy machine, not a later sweep.
			require.Less(t, took, c.BodyReadTimeout+5*time.Second, "soon after the limit")
			t.Logf("%s: answered 408 and closed %s after the request", path, took.Round(time.Millisecond))
		})
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(fds)
}

// Many slow bodies at once: each is answered and closed, and the descriptors they held
// are all given back.
func TestSlowBodiesGiveBackTheirDescriptors(t *testing.T) {
	c := listener.DefaultConfig()
	c.BodyReadTimeout, c.MaxConnsPerAddress = 500*time.Millisecond, 0
	addr := serve(t, c, handlers())
	before := openFDs(t)

	const n = 300
	conns := make([]net.Conn, n)
	for i := range conns {
		path := "/healthz"
		if i%2 == 0 {
			path = "/read"
		}
		conns[i] = slowRequest(t, addr, path)
	}
	held := openFDs(t)
	require.GreaterOrEqual(t, held, before+n, "the slow connections hold descriptors")
	for _, conn := range conns {
		resp, body := readAnswer(t, conn)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
		conn.Close()
	}
	// The server closes its side just after its answer (it half-closes first, so the
	// client reads the answer): wait for the last of them.
	eventually.True(t, fmt.Sprintf("the descriptors to be given back (%d before, %d while held)", before, held), func() bool { return openFDs(t) <= before })
	t.Logf("descriptors: %d before, %d while %d slow bodies were held, %d after", before, held, n, openFDs(t))
}

// sendPaced sends size bytes of body to path in pieces of piece bytes, one every
// every, and returns the answer.
func sendPaced(t *testing.T, addr, path string, size, piece int, every time.Duration) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", path, size)
	require.NoError(t, err)
	// The pace is the scenario: a client on a slow link, not a wait for the server.
	tick := time.NewTicker(every)
	defer tick.Stop()
	chunk := []byte(strings.Repeat("x", piece))
	for sent := 0; sent < size; sent += piece {
		if _, err := conn.Write(chunk[:min(piece, size-sent)]); err != nil {
			break // cut: the answer says why
		}
		<-tick.C
	}
	return readAnswer(t, conn)
}

// A slow but steady upload runs past the read timeout many times over and succeeds; a
// trickle that brings bytes within the read timeout each time but averages less than
// the minimum rate is cut.
func TestBodyRate(t *testing.T) {
	t.Parallel()
	c := listener.DefaultConfig()
	c.BodyReadTimeout, c.MinBodyRate = time.Second, 1000
	addr := serve(t, c, handlers())
	t.Run("SteadyUploadSucceeds", func(t *testing.T) {
		t.Parallel()
		// 5,000 bytes a second for 3 s: three times the read timeout, which a deadline
		// for the whole body would have cut.
		resp, body := sendPaced(t, addr, "/read", 15000, 500, 100*time.Millisecond)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.Equal(t, "15000", string(body))
	})
	t.Run("TrickleBelowTheRateIsCut", func(t *testing.T) {
		t.Parallel()
		// 200 bytes a second: each piece within the read timeout, the average a fifth
		// of the minimum.
		resp, body := sendPaced(t, addr, "/read", 15000, 100, 500*time.Millisecond)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
		requireCode(t, body, "request_timeout")
	})
}

// A client address holds at most MaxConnsPerAddress connections: the next is answered
// 429 rate_limited and closed without reaching a handler, and a place freed is taken
// again.
func TestConnectionsPerAddress(t *testing.T) {
	t.Parallel()
	c := listener.DefaultConfig()
	c.MaxConnsPerAddress = 3
	reading := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		reading <- struct{}{}
		_, _ = io.ReadAll(r.Body)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	addr := serve(t, c, mux)

	held := make([]net.Conn, c.MaxConnsPerAddress)
	for i := range held {
		held[i] = slowRequest(t, addr, "/hold")
		<-reading // the server took it
	}
	over, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer over.Close()
	_, err = io.WriteString(over, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, body := readAnswer(t, over)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(body))
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	requireCode(t, body, "rate_limited")

	held[0].Close()
	eventually.True(t, "a closed connection to give its place back", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// A client that waits for 100 Continue before sending its body is answered at once by
// a handler that does not want the body: it is never asked for it.
func TestExpectContinueIsNotAskedForAnUnreadBody(t *testing.T) {
	t.Parallel()
	c := listener.DefaultConfig()
	c.BodyReadTimeout = time.Minute
	addr := serve(t, c, handlers())
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	resp, body := readAnswer(t, conn)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the answer, not 100 Continue: %s", body)
	require.Equal(t, "ok", string(body))
}
