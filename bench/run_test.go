package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
	imageop "github.com/filemill/filemill/jobs/ops/image"
)

// requestLog watches the requests a deployment gets, to tell a retry: a POST whose
// Idempotency-Key came before, and the answers that call for one (429, 503, 504).
type requestLog struct {
	mu   sync.Mutex
	keys map[string]bool
	n    requestCounts
}

type requestCounts struct {
	requests int
	puts     int
	repeated int // POSTs with an Idempotency-Key already seen
	retrying int // answers a client is right to retry
}

func (c requestCounts) add(o requestCounts) requestCounts {
	return requestCounts{c.requests + o.requests, c.puts + o.puts, c.repeated + o.repeated, c.retrying + o.retrying}
}

func newRequestLog() *requestLog { return &requestLog{keys: map[string]bool{}} }

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n.requests++
		if r.Method == http.MethodPut {
			l.n.puts++
		}
		if k := r.Header.Get("Idempotency-Key"); k != "" && r.Method == http.MethodPost {
			if l.keys[k] {
				l.n.repeated++
			}
			l.keys[k] = true
		}
		if sw.status == http.StatusTooManyRequests || sw.status == http.StatusServiceUnavailable || sw.status == http.StatusGatewayTimeout {
			l.n.retrying++
		}
	})
}

// take answers the counts since the last take and starts again.
func (l *requestLog) take() requestCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.n
	l.n = requestCounts{}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack lets the websocket upgrade take the connection.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// photoSet writes n distinct copies of one photo-like 3000×2000 JPEG into a new
// directory: each carries its own comment, so no two have the same SHA-256 and none
// matches a file of an earlier set.
func photoSet(b *testing.B, base []byte, n int, tag string) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		com := []byte(fmt.Sprintf("filemill bench %s %d %d", tag, i, time.Now().UnixNano()))
		var buf bytes.Buffer
		buf.Write(base[:2]) // SOI
		buf.Write([]byte{0xff, 0xfe, byte((len(com) + 2) >> 8), byte(len(com) + 2)})
		buf.Write(com)
		buf.Write(base[2:])
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("photo-%03d.jpg", i)), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// photo3MP is a photo-like 3000×2000 JPEG, quality 90.
func photo3MP(b *testing.B) []byte { return photoLike(b, 3000, 2000, 2) }

// sdkRun does what `filemill run --preset image DIR --concurrency 4 -o OUT` does, as a
// Go program on the SDK would: uploads the files four at a time, makes one batch,
// follows its jobs four at a time and downloads each one's artifacts into out.
func sdkRun(ctx context.Context, cl *client.Client, dir, out string, concurrency int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	ids := make([]string, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i, e := range entries {
		g.Go(func() error {
			f, err := cl.UploadFile(gctx, filepath.Join(dir, e.Name()), client.UploadOptions{})
			if err != nil {
				return err
			}
			ids[i] = f.Id
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	batch, err := cl.CreateBatch(ctx, api.CreateBatchRequest{FileIds: ids, Preset: client.Ptr(api.Preset("image"))})
	if err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for _, it := range batch.Items {
		g.Go(func() error {
			job, err := cl.WaitJob(gctx, it.JobId)
			if err != nil {
				return err
			}
			if job.State != api.JobStateSucceeded {
				return fmt.Errorf("job %s %s", job.Id, job.State)
			}
			for a, err := range cl.JobArtifacts(gctx, job.Id) {
				if err != nil {
					return err
				}
				f, err := os.Create(filepath.Join(out, job.Id+"-"+a.Name))
				if err != nil {
					return err
				}
				_, err = cl.Download(gctx, a.FileId, a.Id, f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// BenchmarkCLIRunImagePreset runs the image preset on 100 photos (3000×2000 JPEG) with
// `filemill run --preset image DIR --concurrency 4 -o OUT`, and with a Go program on the
// SDK doing the same work (sdkRun), alternating, BENCH_ROUNDS times each (default 3),
// each round on photos of its own. It reports each side's median throughput, their
// ratio, and the requests each sent again: POSTs repeating an Idempotency-Key, beside
// the answers that called for a retry (429, 503, 504). Goals: the CLI within 10 % of the
// SDK; no retry without a cause.
func BenchmarkCLIRunImagePreset(b *testing.B) {
	const photos, concurrency = 100, 4
	log := newRequestLog()
	s, _ := newLiveStack(b, log.wrap)
	eng, err := imageop.New(imageop.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	s.engines["image"] = eng
	w := s.startWorker(b, 2)
	defer w.Shutdown()
	bin := buildFilemill(b)
	home := b.TempDir()
	base := photo3MP(b)
	cl, err := client.New(s.srv.URL, s.key)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	countOut := func(dir string) int {
		entries, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		return len(entries)
	}
	log.take() // the stack's own setup
	for i := 0; i < b.N; i++ {
		var cliRates, sdkRates []float64
		var cliLog, sdkLog requestCounts // over every round
		for r := 0; r < benchRounds(); r++ {
			dir, out := photoSet(b, base, photos, fmt.Sprintf("sdk-%d-%d", i, r)), b.TempDir()
			log.take()
			t0 := time.Now()
			if err := sdkRun(ctx, cl, dir, out, concurrency); err != nil {
				b.Fatalf("sdk: %v", err)
			}
			sdkRates = append(sdkRates, photos/time.Since(t0).Seconds())
			sdkLog = sdkLog.add(log.take())
			if n := countOut(out); n != 2*photos {
				b.Fatalf("sdk: %d outputs, want %d", n, 2*photos)
			}

			dir, out = photoSet(b, base, photos, fmt.Sprintf("cli-%d-%d", i, r)), b.TempDir()
			cmd := exec.Command(bin, "run", "--preset", "image", dir, "--concurrency", fmt.Sprint(concurrency), "-o", out, "--quiet")
			cmd.Env = append(os.Environ(), "FILEMILL_API_URL="+s.srv.URL, "FILEMILL_API_KEY="+s.key,
				"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			t0 = time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("filemill run: %v %s", err, stderr.String())
			}
			cliRates = append(cliRates, photos/time.Since(t0).Seconds())
			cliLog = cliLog.add(log.take())
			if n := countOut(out); n != 2*photos {
				b.Fatalf("cli: %d outputs, want %d", n, 2*photos)
			}
		}
		cli, sdk := median(cliRates), median(sdkRates)
		b.Logf("photos/s cli %.2f sdk %.2f", cliRates, sdkRates)
		b.ReportMetric(cli, "cli-photos/s")
		b.ReportMetric(sdk, "sdk-photos/s")
		b.ReportMetric(100*cli/sdk, "cli-%-of-sdk")
		rounds := float64(benchRounds())
		b.ReportMetric(float64(cliLog.requests)/rounds, "cli-requests/round")
		b.ReportMetric(float64(sdkLog.requests)/rounds, "sdk-requests/round")
		b.ReportMetric(float64(cliLog.puts)/rounds, "cli-puts/round")
		b.ReportMetric(float64(sdkLog.puts)/rounds, "sdk-puts/round")
		b.ReportMetric(float64(cliLog.repeated), "cli-posts-repeated")
		b.ReportMetric(float64(sdkLog.repeated), "sdk-posts-repeated")
		b.ReportMetric(float64(cliLog.retrying+sdkLog.retrying), "answers-asking-retry")
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
