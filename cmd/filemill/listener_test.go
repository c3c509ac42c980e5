package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
)

// The slow-body limits of the test's server: short, so the test does not wait minutes.
const (
	testBodyReadTimeout = time.Second
	testBodyMinRate     = 1000
	testConnsPerAddress = 100
	// testNoFile is the server's descriptor limit, a common default: 3,000 slow bodies
	// held at once would exhaust it.
	testNoFile = 1024
)

// TestSlowBodies runs `filemill serve` with a descriptor limit of 1,024 and sends it
// what an attacker would: 3,000 connections that announce a body of 100 bytes and send
// one, to the API and to the storage host. Each is answered 408 and closed once the
// read timeout has passed, or refused at once (429, or closed) beyond the cap per
// address; the server's descriptors stay bounded and come back, and the server answers
// other clients throughout. A real upload, slow but steady, still lands.
func TestSlowBodies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr, "FILEMILL_ENGINES=inspect",
		"FILEMILL_BODY_READ_TIMEOUT="+testBodyReadTimeout.String(), "FILEMILL_BODY_MIN_RATE="+strconv.Itoa(testBodyMinRate),
		"FILEMILL_MAX_CONNS_PER_ADDRESS="+strconv.Itoa(testConnsPerAddress))
	p := startCommand(t, exec.Command("prlimit", "--nofile="+strconv.Itoa(testNoFile), binary, "serve"), dir, env, []string{"serve"})
	base := "http://" + addr
	waitReady(t, base)
	fdDir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	openFDs := func() int {
		fds, err := os.ReadDir(fdDir)
		require.NoError(t, err)
		return len(fds)
	}
	before := openFDs()

	// Another client, from another loopback address: the cap counts per address.
	other := &http.Client{Timeout: safetyBound, Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}).DialContext}}
	healthy := func() {
		t.Helper()
		resp, err := other.Get(base + "/healthz")
		require.NoError(t, err, "the server answers other clients")
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
	}

	const n = 3000
	type outcome struct {
		status int           // 0: closed without an answer
		took   time.Duration // from the request to the connection's end
	}
	outcomes := make([]outcome, n)
	var wg sync.WaitGroup
	var peak int
	for i := range n {
		target, path := addr, "/healthz"
		if i%3 == 2 {
			target, path = storageAddr, "/o/some/key"
		}
		c, err := net.Dial("tcp", target)
		require.NoError(t, err)
		sent := time.Now()
		// A write may fail on a connection already refused: its outcome says so.
		_, _ = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(safetyBound))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				_, err = br.ReadByte() // the end of the connection
				if !errors.Is(err, io.EOF) {
					t.Errorf("connection %d: not closed after its %d answer: %v", i, resp.StatusCode, err)
				}
				outcomes[i].status = resp.StatusCode
			} else {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("connection %d: neither answered nor closed", i)
				}
			}
			outcomes[i].took = time.Since(sent)
		}()
		if i%500 == 499 {
			peak = max(peak, openFDs())
			healthy()
		}
	}
	peak = max(peak, openFDs())
	healthy()
	wg.Wait()

	byStatus := map[int]int{}
	var slowest time.Duration
	for i, o := range outcomes {
		byStatus[o.status]++
		switch o.status {
		case http.StatusRequestTimeout:
			require.GreaterOrEqual(t, o.took, testBodyReadTimeout, "connection %d answered before the limit", i)
			slowest = max(slowest, o.took)
		case http.StatusTooManyRequests, 0:
		default:
			t.Errorf("connection %d: answered %d", i, o.status)
		}
	}
	t.Logf("outcomes by status (0: closed unanswered): %v; slowest 408 %s after its request", byStatus, slowest.Round(time.Millisecond))
	t.Logf("server descriptors: %d before, at most %d seen during, limit %d", before, peak, testNoFile)
	require.Positive(t, byStatus[http.StatusRequestTimeout])
	// Closed when the timeout has passed, not at some later sweep: the slack is only
	// for a busy machine's scheduling of thousands of sockets.
	require.Less(t, slowest, testBodyReadTimeout+closeSlack, "every slow body answered soon after the limit")
	require.Positive(t, byStatus[http.StatusTooManyRequests], "the cap refused the excess")
	// Two listeners, each holding at most the cap for this address, each refusal
	// lingering briefly (at most 64 at once per listener), and the server's own.
	require.Less(t, peak, before+2*(testConnsPerAddress+64)+50, "descriptors stay bounded")
	eventually.True(t, fmt.Sprintf("the server to give its descriptors back (%d before)", before), func() bool { return openFDs() <= before+5 })
	healthy()

	t.Run("SlowSteadyUploadLands", func(t *testing.T) {
		key := bootstrapFileKey(t, dir)
		// 5,000 bytes a second for 3 s: three times the read timeout.
		const size, piece, every = 15000, 500, 100 * time.Millisecond
		status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "slow.txt", "byte_size": size})
		require.Equal(t, 201, status, "%v", up)
		pr, pw := io.Pipe()
		go func() {
			// The pace is the scenario, a client on a slow link.
			tick := time.NewTicker(every)
			defer tick.Stop()
			chunk := []byte(strings.Repeat("a", piece))
			for sent := 0; sent < size; sent += piece {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
				<-tick.C
			}
			pw.Close()
		}()
		req, err := http.NewRequest("PUT", up["upload_url"].(string), pr)
		require.NoError(t, err)
		req.ContentLength = size
		started := time.Now()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, string(body))
		require.Greater(t, time.Since(started), 2*testBodyReadTimeout, "the upload outlasted the read timeout")
		status, file := apiPost(t, base+"/v1/files/"+up["file_id"].(string)+"/complete", key, nil)
		require.Equal(t, 200, status, "%v", file)
		require.EqualValues(t, size, file["byte_size"])
	})
}

// safetyBound bounds waits the limits under test must end much sooner.
const safetyBound = 60 * time.Second

// closeSlack is how long past the read timeout a slow body may still be open: the
// server closes it at the timeout, and a busy machine may run that late.
const closeSlack = 10 * time.Second

// bootstrapFileKey is the live key the first start wrote into dir's data directory.
func bootstrapFileKey(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "data", "bootstrap.json"))
	require.NoError(t, err)
	var boot map[string]string
	require.NoError(t, json.Unmarshal(raw, &boot))
	return boot["api_key"]
}
