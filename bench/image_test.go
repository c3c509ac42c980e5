package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph/graphtest"
	imageop "github.com/filemill/filemill/jobs/ops/image"
)

// benchDuration is how long each side of a side-by-side run lasts (BENCH_DURATION,
// default 15 s).
func benchDuration(b *testing.B) time.Duration {
	if s := os.Getenv("BENCH_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("BENCH_DURATION: %v", err)
		}
		return d
	}
	return 15 * time.Second
}

// benchRounds is how many times Interleave alternates the sides (BENCH_ROUNDS,
// default 3).
func benchRounds() int { return envInt("BENCH_ROUNDS", 3) }

// settledRSS returns this process's resident size (kB) once garbage is collected and
// handed back, and starts its peak afresh from there.
func settledRSS(b *testing.B) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	return vmHWM(b)
}

// vipsThumbnailCLI is one request of the CLI side: `vips thumbnail` of src to a 1024 px
// WebP at quality 79 in dir (prefix keeps runs apart), adding the child's CPU time to
// cpu.
func vipsThumbnailCLI(dir, prefix, src string, cpu *atomic.Int64) func(ctx context.Context, w, i int) bool {
	return func(ctx context.Context, w, i int) bool {
		out := filepath.Join(dir, fmt.Sprintf("%s-%d-%d.webp", prefix, w, i))
		defer os.Remove(out)
		cmd := exec.CommandContext(ctx, "vips", "thumbnail", src, out+"[Q=79]", "1024")
		if err := cmd.Run(); err != nil {
			return false
		}
		cpu.Add(int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()))
		return true
	}
}

// photoJPEG writes a photo-like 6000×4000 JPEG (gradients, texture and noise, quality
// 90) once per machine and returns its path.
// photoLike is a w×h JPEG at quality 90 with a photo's gradients and noise (seeded).
func photoLike(b *testing.B, w, h int, seed int64) []byte {
	im := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewSource(seed))
	fw, fh := float64(w), float64(h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := float64(r.Intn(24))
			fx, fy := float64(x)/fw, float64(y)/fh
			c := func(v float64) uint8 { return uint8(math.Max(0, math.Min(255, v))) }
			im.SetRGBA(x, y, color.RGBA{c(255*fx + 40*math.Sin(float64(x)/37) + n), c(255*fy + 30*math.Cos(float64(y)/23)),
				c(128 + 100*math.Sin(float64(x+y)/91) + n), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, im, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func photoJPEG(b *testing.B) string {
	p := filepath.Join(os.TempDir(), "filemill-bench-6000x4000.jpg")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, photoLike(b, 6000, 4000, 1), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		b.Fatal(err)
	}
	return p
}

// cliPeakKB is one CLI conversion's peak resident size, measured by time(1): a child's
// own rusage would include what it shared with this process before exec.
func cliPeakKB(b *testing.B, src, out string) int64 {
	var stderr bytes.Buffer
	cmd := exec.Command("/usr/bin/time", "-f", "%M", "vips", "thumbnail", src, out+"[Q=79]", "1024")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("time vips thumbnail: %v: %s", err, stderr.String())
	}
	var kb int64
	lines := bytes.Split(bytes.TrimSpace(stderr.Bytes()), []byte("\n"))
	if _, err := fmt.Sscan(string(lines[len(lines)-1]), &kb); err != nil {
		b.Fatalf("time's answer %q: %v", stderr.String(), err)
	}
	return kb
}

// BenchmarkImageConvert runs image.convert's engine path and the `vips thumbnail` CLI
// on the same 6000×4000 JPEG → 1024 px WebP at quality 79, one at a time and two at a
// time, and reports images/s for each, their ratio, and peak resident memory: the
// engine's whole process, the CLI's largest child. The engine runs with libvips'
// threads set to the cores divided by the conversions at once. Goals: ≥ 1.3× the
// CLI's throughput, ≥ 3.5 images/s one at a time on 2 cores.
func BenchmarkImageConvert(b *testing.B) {
	if _, err := exec.LookPath("vips"); err != nil {
		b.Fatalf("the vips CLI is needed for the comparison: apt-get install -y --no-install-recommends libvips-tools")
	}
	src := photoJPEG(b)
	dir := b.TempDir()
	d := benchDuration(b)
	opts := engineOptions(b, imageop.Specs(), "image.convert", `{"format":"webp","width":1024,"height":1024,"fit":"inside","quality":79}`)
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("at-once=%d", par), func(b *testing.B) {
			cfg := imageop.DefaultConfig()
			cfg.Threads = max(1, runtime.NumCPU()/par)
			eng, err := imageop.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			engine := func(ctx context.Context, w, i int) bool {
				work := filepath.Join(dir, fmt.Sprintf("e%d-%d-%d", par, w, i))
				if err := os.Mkdir(work, 0o700); err != nil {
					return false
				}
				defer os.RemoveAll(work)
				out, err := eng.Run(ctx, domain.EngineInput{Operation: "image.convert", Options: opts, Path: src,
					Filename: "photo.jpg", WorkDir: work})
				return err == nil && len(out.Artifacts) == 1
			}
			// Warm the engine up (libvips' modules load on first use), as a worker
			// is by the time jobs arrive, and leave nothing of the input's generation.
			engine(context.Background(), 0, -1)
			base := settledRSS(b)
			var engineCPU time.Duration
			var cliCPU atomic.Int64
			cli := vipsThumbnailCLI(dir, fmt.Sprintf("c%d", par), src, &cliCPU)
			rs := Interleave(benchRounds(), d, func(d time.Duration) LoadResult {
				cpu0 := selfCPU()
				defer func() { engineCPU += selfCPU() - cpu0 }()
				return Drive(context.Background(), par, d, engine)
			}, func(d time.Duration) LoadResult {
				return Drive(context.Background(), par, d, cli)
			})
			er, cr := rs[0], rs[1]
			enginePeak := vmHWM(b)
			cliPeak := cliPeakKB(b, src, filepath.Join(dir, "peak.webp"))
			b.ReportMetric(er.RPS(), "engine-images/s")
			b.ReportMetric(cr.RPS(), "cli-images/s")
			b.ReportMetric(er.RPS()/cr.RPS(), "x-cli")
			b.ReportMetric(float64(er.P50.Milliseconds()), "engine-p50-ms")
			b.ReportMetric(float64(cr.P50.Milliseconds()), "cli-p50-ms")
			// Processor time per image: what each side costs, whatever else the
			// machine is doing.
			b.ReportMetric(engineCPU.Seconds()*1000/float64(er.Requests), "engine-cpu-ms/image")
			b.ReportMetric(float64(cliCPU.Load())/1e6/float64(cr.Requests), "cli-cpu-ms/image")
			b.ReportMetric(float64(enginePeak)/1024, "engine-process-peak-MiB")
			b.ReportMetric(float64(base)/1024, "engine-process-before-MiB")
			b.ReportMetric(float64(cliPeak)/1024, "cli-peak-MiB")
			b.ReportMetric(float64(er.Errors+cr.Errors), "errors")
			b.ReportMetric(er.CPU.Steal, "cpu-steal-%")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkImageConvertJobPath runs image.convert through the whole job path — POST
// /v1/jobs, the queue, a worker fetching the stored 6000×4000 JPEG, the engine, the
// artifact stored, settlement, and the client learning that the job succeeded —
// against the `vips thumbnail` CLI on the same file, one and two at a time, in one run,
// with the processor time each job costs and the worker's peak memory. Goals: ≥ 1.3×
// the CLI's throughput; ≥ 3.5 jobs/s one at a time.
//
// The client learns of the outcome two ways, each measured: from a GraphQL jobUpdated
// subscription (the job's events through the outbox relay and Redis, as a front end
// does), and by polling GET /v1/jobs/{id} every BENCH_POLL (default 2 ms): short enough
// to add little to a job's latency, but every poll is a request the API and its
// database serve on the same cores as the worker; machine-cpu-ms/job shows the cost.
func BenchmarkImageConvertJobPath(b *testing.B) {
	if _, err := exec.LookPath("vips"); err != nil {
		b.Fatalf("the vips CLI is needed for the comparison: apt-get install -y --no-install-recommends libvips-tools")
	}
	srcPath := photoJPEG(b)
	src, err := os.ReadFile(srcPath)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	d := benchDuration(b)
	poll := 2 * time.Millisecond
	if v := os.Getenv("BENCH_POLL"); v != "" {
		if poll, err = time.ParseDuration(v); err != nil {
			b.Fatalf("BENCH_POLL: %v", err)
		}
	}
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("at-once=%d", par), func(b *testing.B) {
			s, _ := newLiveStack(b)
			cfg := imageop.DefaultConfig()
			cfg.Threads = max(1, runtime.NumCPU()/par)
			eng, err := imageop.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			s.engines["image"] = eng
			w := s.startWorker(b, par)
			defer w.Shutdown()
			fileID := s.readyFile(b, "photo.jpg", src)
			client := NewClient(par)
			options := map[string]any{"format": "webp", "width": 1024, "height": 1024, "fit": "inside", "quality": 79}
			conns := make([]*graphtest.Conn, par)
			for i := range conns {
				conns[i] = dialLive(b, s.srv.URL, s.key)
			}
			// Each client's latest job: one the deadline cut is still running in the
			// worker, and is waited for before the next side runs.
			last := make([]string, par)
			create := func(ctx context.Context, w int) (string, bool) {
				st, j, err := s.call(ctx, client, "POST", "/v1/jobs", map[string]any{"file_id": fileID, "operation": "image.convert", "options": options})
				if err != nil || st != 202 {
					return "", false
				}
				last[w] = j["id"].(string)
				return last[w], true
			}
			settle := func() {
				for _, id := range last {
					for id != "" {
						st, j, err := s.call(context.Background(), client, "GET", "/v1/jobs/"+id, nil)
						if err != nil || st != 200 || j["state"] == "succeeded" || j["state"] == "failed" || j["state"] == "cancelled" {
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
				clear(last)
			}
			subscribed := func(ctx context.Context, w, _ int) bool {
				id, ok := create(ctx, w)
				if !ok {
					return false
				}
				sub, ch, err := conns[w].Subscribe(benchJobSub, map[string]any{"id": id})
				if err != nil {
					return false
				}
				defer conns[w].Stop(sub)
				for {
					select {
					case <-ctx.Done():
						return false
					case r, open := <-ch:
						if !open || r.Data == nil {
							return false
						}
						switch r.Data["jobUpdated"].(map[string]any)["state"] {
						case "succeeded":
							return true
						case "failed", "cancelled":
							return false
						}
					}
				}
			}
			polled := func(ctx context.Context, w, _ int) bool {
				id, ok := create(ctx, w)
				if !ok {
					return false
				}
				for {
					st, j, err := s.call(ctx, client, "GET", "/v1/jobs/"+id, nil)
					if err != nil || st != 200 {
						return false
					}
					switch j["state"] {
					case "succeeded":
						return true
					case "failed", "cancelled":
						return false
					}
					time.Sleep(poll)
				}
			}
			subscribed(context.Background(), 0, -1) // warm the engine, as a running worker is
			base := settledRSS(b)
			var jobCPU time.Duration
			var cliCPU atomic.Int64
			cli := vipsThumbnailCLI(dir, fmt.Sprintf("j%d", par), srcPath, &cliCPU)
			rs := Interleave(benchRounds(), d, func(d time.Duration) LoadResult {
				cpu0 := selfCPU()
				r := Drive(context.Background(), par, d, subscribed)
				settle()
				jobCPU += selfCPU() - cpu0
				return r
			}, func(d time.Duration) LoadResult {
				defer settle()
				return Drive(context.Background(), par, d, polled)
			}, func(d time.Duration) LoadResult {
				return Drive(context.Background(), par, d, cli)
			})
			jr, pr, cr := rs[0], rs[1], rs[2]
			// Polling adds its own requests to the worker's process: the peak is of
			// both ways of learning the outcome.
			peak := vmHWM(b)
			b.ReportMetric(jr.RPS(), "job-path-images/s")
			b.ReportMetric(cr.RPS(), "cli-images/s")
			b.ReportMetric(jr.RPS()/cr.RPS(), "x-cli")
			b.ReportMetric(float64(jr.P50.Milliseconds()), "job-p50-ms")
			b.ReportMetric(pr.RPS(), "polled-images/s")
			b.ReportMetric(pr.RPS()/cr.RPS(), "polled-x-cli")
			b.ReportMetric(machineCPUms(pr)/float64(pr.Requests), "polled-machine-cpu-ms/job")
			// Processor time per job: this process (API, queue, worker, engine and the
			// polling client), and the whole machine's, PostgreSQL and Redis included.
			b.ReportMetric(jobCPU.Seconds()*1000/float64(jr.Requests), "process-cpu-ms/job")
			b.ReportMetric(machineCPUms(jr)/float64(jr.Requests), "machine-cpu-ms/job")
			b.ReportMetric(float64(cliCPU.Load())/1e6/float64(cr.Requests), "cli-cpu-ms/image")
			b.ReportMetric(float64(jr.Errors+pr.Errors+cr.Errors), "errors")
			b.ReportMetric(jr.CPU.Steal, "cpu-steal-%")
			// The worker runs in this process: its peak during the jobs, and before them.
			b.ReportMetric(float64(peak)/1024, "process-peak-MiB")
			b.ReportMetric(float64(base)/1024, "process-before-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// machineCPUms is the processor time every process on the machine used during r, in
// milliseconds.
func machineCPUms(r LoadResult) float64 {
	return r.CPU.Busy / 100 * float64(runtime.NumCPU()) * float64(r.Elapsed.Milliseconds())
}
