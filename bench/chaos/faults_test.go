//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The kinds of fault, each injected at least once per round of the schedule.
const (
	faultWorkerKill   = "worker kill -9"
	faultWorkerOffice = "worker kill -9 mid-conversion"
	faultWorkerUpload = "worker kill -9 mid-upload"
	faultAPIKill      = "api kill -9"
	faultRedis        = "redis restart, empty"
	faultPostgres     = "postgresql down"
	faultMinio        = "minio down"
	faultWebhook      = "webhook receiver down"
	faultWebhookSlow  = "webhook receiver slow"
	faultWebhookError = "webhook receiver erroring"
	faultDiskFull     = "worker disk full"
)

var faultKinds = []string{faultWorkerKill, faultWorkerOffice, faultWorkerUpload, faultAPIKill, faultRedis, faultPostgres, faultMinio,
	faultWebhook, faultWebhookSlow, faultWebhookError, faultDiskFull}

// faults injects the seeded schedule, one fault at a time: a round is every kind in an
// order drawn from the seed, with a hold (how long the fault lasts) and a gap drawn
// from it too. Rounds go on until the duration is spent; the first always completes.
type faults struct {
	d     *deployment
	c     *client
	rng   *rand.Rand
	hooks *delivered

	count    int
	byKind   map[string]int
	recovery map[string][]time.Duration
	// victims counts the attempts under way in the workers killed.
	victims int
	// officeHits counts kills that met a conversion in progress.
	officeHits int
	// uploadKills counts kills aimed at an artifact upload; uploadHits those that
	// landed before the upload's body had reached MinIO whole.
	uploadKills, uploadHits int
	// late counts answers that were wrong more than a second after PostgreSQL was back.
	late []string
	// storageDown are the times MinIO was down: a job that ended then could not have its
	// lost attempts' objects swept.
	storageDown [][2]time.Time
}

func (f *faults) run(ctx context.Context, duration time.Duration) {
	t := f.d.t
	f.byKind = map[string]int{}
	long := duration >= 5*time.Minute
	start := time.Now()
	for round := 0; round == 0 || time.Since(start) < duration; round++ {
		order := slices.Clone(faultKinds)
		f.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, kind := range order {
			if round > 0 && time.Since(start) >= duration {
				break
			}
			hold := f.hold(kind, long)
			victim := f.rng.IntN(3)
			gap := time.Duration(1000+f.rng.IntN(3000)) * time.Millisecond
			time.Sleep(gap) // the schedule's pause between faults, not a wait on anything
			f.count++
			f.byKind[kind]++
			t.Logf("chaos: fault %d at +%s: %s (hold %s, victim %d)", f.count, time.Since(start).Round(time.Millisecond), kind, hold, victim)
			rec := f.inject(ctx, kind, hold, victim)
			if rec >= 0 {
				f.recovery[kind] = append(f.recovery[kind], rec)
				t.Logf("chaos:   recovered %s after the fault ended", rec.Round(time.Millisecond))
			}
		}
	}
}

// hold is how long a fault lasts: longer in a long campaign (PostgreSQL down up to
// 30 s, the receiver for minutes).
func (f *faults) hold(kind string, long bool) time.Duration {
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(f.rng.Int64N(int64(hi-lo)))
	}
	switch kind {
	case faultPostgres:
		if long {
			return between(5*time.Second, 30*time.Second)
		}
		return between(2*time.Second, 6*time.Second)
	case faultRedis, faultMinio:
		return between(time.Second, 5*time.Second)
	case faultWebhook, faultWebhookSlow, faultWebhookError:
		if long {
			return between(10*time.Second, 2*time.Minute)
		}
		return between(2*time.Second, 8*time.Second)
	case faultDiskFull:
		return between(2*time.Second, 10*time.Second)
	}
	return 0
}

// inject makes one fault and answers the time from its end until the service answers
// right again (negative: not measured).
func (f *faults) inject(ctx context.Context, kind string, hold time.Duration, victim int) time.Duration {
	t, d := f.d.t, f.d
	switch kind {
	case faultWorkerKill:
		return f.killWorker(victim)
	case faultWorkerUpload:
		return f.killMidUpload(ctx, victim)
	case faultWorkerOffice:
		// Wait (boundedly) for an office conversion under way in a worker, and kill
		// that worker in the middle of it.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for i := range d.workers {
				for _, id := range d.attemptsIn(i) {
					var op, preset string
					if err := d.db.QueryRowContext(ctx, "SELECT operation, preset FROM jobs WHERE id = $1 AND state = 'running'", id).Scan(&op, &preset); err == nil &&
						(op == "convert" || preset == "ai-ready") {
						f.officeHits++
						return f.killWorker(i)
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("chaos:   no conversion under way within 30s: a plain worker kill")
		return f.killWorker(victim)
	case faultAPIKill:
		pid := d.apis[victim%2].kill()
		t.Logf("chaos:   killed %s (pid %d)", d.apis[victim%2].name, pid)
		end := time.Now()
		return f.answersRight(end, func() bool { return f.read(d.apiURLs[victim%2]) })
	case faultRedis:
		d.redis.Stop()
		time.Sleep(hold)
		d.redis.Start()
		end := time.Now()
		return f.answersRight(end, func() bool { return f.probeJob(ctx) })
	case faultPostgres:
		d.pg.Stop()
		time.Sleep(hold)
		d.pg.Start()
		end := time.Now()
		rec := f.answersRight(end, func() bool {
			ok := true
			for _, u := range d.apiURLs {
				ok = f.read(u) && f.write(u) && ok
			}
			return ok
		})
		if rec > time.Second {
			f.late = append(f.late, fmt.Sprintf("%s after a %s outage", rec.Round(time.Millisecond), hold.Round(time.Millisecond)))
		}
		return rec
	case faultMinio:
		start := time.Now()
		d.minio.stop()
		time.Sleep(hold)
		d.minio.start(t)
		end := time.Now()
		f.storageDown = append(f.storageDown, [2]time.Time{start, end})
		return f.answersRight(end, func() bool { return f.probeUpload(ctx) })
	case faultWebhook:
		d.recv.down()
		time.Sleep(hold)
		d.recv.up(t)
		return f.deliveredAgain(time.Now())
	case faultWebhookSlow, faultWebhookError:
		mode := hookSlow
		if kind == faultWebhookError {
			mode = hookErroring
		}
		f.hooks.setMode(mode)
		time.Sleep(hold)
		f.hooks.setMode(hookPrompt)
		return f.deliveredAgain(time.Now())
	case faultDiskFull:
		filler := filepath.Join(d.fullDisk, "filler")
		fill(t, filler)
		time.Sleep(hold)
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		return f.answersRight(end, func() bool { return f.probeJob(ctx) })
	}
	t.Fatalf("unknown fault %q", kind)
	return -1
}

// deliveredAgain answers the time from end until a webhook delivery lands again (the
// load keeps making events).
func (f *faults) deliveredAgain(end time.Time) time.Duration {
	for !f.hooks.lastAt().After(end) {
		if time.Since(end) > recoveryBound {
			f.d.dumpDeliveries()
			f.d.t.Fatalf("no webhook delivery within %s of the receiver's return", recoveryBound)
		}
		time.Sleep(25 * time.Millisecond)
	}
	return time.Since(end)
}

// killMidUpload kills the worker that streams a large artifact to MinIO, as its first
// bytes pass its tap: the fault waits for the upload, never for a moment. A job with a
// large artifact of its own is asked for at once, in case the load has none coming.
func (f *faults) killMidUpload(ctx context.Context, victim int) time.Duration {
	t, d := f.d.t, f.d
	ups := d.taps.arm()
	go f.largeJob(ctx)
	var up *upload
	select {
	case up = <-ups:
	case <-time.After(2 * time.Minute):
		d.taps.disarm()
		t.Logf("chaos:   no large artifact upload within 2m: a plain worker kill")
		return f.killWorker(victim)
	}
	pid := d.workers[up.worker].kill()
	end := time.Now()
	f.uploadKills++
	select {
	case <-up.done:
	case <-time.After(recoveryBound):
		t.Fatalf("the upload of job %s's artifact through the tap did not end within %s of its worker's kill", up.job, recoveryBound)
	}
	if !up.whole {
		f.uploadHits++
	}
	t.Logf("chaos:   %s's upload of an artifact of job %s: %d of %d bytes had passed the tap when its body ended (whole: %t)",
		d.workers[up.worker].name, up.job, up.sent.Load(), up.size, up.whole)
	return f.killed(up.worker, pid, end)
}

// largeJob asks for an image.convert job with a large artifact, on an input uploaded
// once. It is a probe: the invariants hold for it as for the load's jobs.
func (f *faults) largeJob(ctx context.Context) {
	largeInput.Do(func() {
		largeInput.id, largeInput.err = f.c.upload(ctx, "large.png", pngFile(rand.New(rand.NewPCG(1, 2))))
	})
	if largeInput.err != nil {
		f.d.t.Errorf("upload the large job's input: %v", largeInput.err)
		return
	}
	status, j, err := f.c.do(ctx, requestBound, "POST", "/v1/jobs", map[string]any{"file_id": largeInput.id, "operation": "image.convert",
		"options": largeImage})
	if err != nil || status != 202 {
		f.d.t.Errorf("ask for a job with a large artifact: %d %v %v", status, j, err)
		return
	}
	probes.Lock()
	probes.ids = append(probes.ids, j["id"].(string))
	probes.Unlock()
}

// largeInput is the file the faults' large jobs convert.
var largeInput struct {
	sync.Once
	id  string
	err error
}

// killWorker kills worker i with SIGKILL and answers the time until every job it had
// under way has ended elsewhere (negative: it had none).
func (f *faults) killWorker(i int) time.Duration {
	pid := f.d.workers[i].kill()
	return f.killed(i, pid, time.Now())
}

// killed reports the kill of worker i (pid, at end) and answers the time from end
// until every job it had under way has ended elsewhere (negative: it had none). The
// jobs are listed after the kill, so that an aimed kill waits on no query: a dead
// worker's jobs stay running until their lease lapses.
func (f *faults) killed(i, pid int, end time.Time) time.Duration {
	d := f.d
	// A scratch directory of an attempt killed earlier stays until the hourly sweep:
	// only the running jobs count.
	var under []string
	for _, id := range d.attemptsIn(i) {
		var state string
		if d.db.QueryRow("SELECT state FROM jobs WHERE id = $1", id).Scan(&state) == nil && state == "running" {
			under = append(under, id)
		}
	}
	d.t.Logf("chaos:   killed %s (pid %d) with %d attempts under way %v", d.workers[i].name, pid, len(under), under)
	f.victims += len(under)
	if len(under) == 0 {
		return -1
	}
	waitFor(d.t, "the killed worker's jobs to end", recoveryBound, func() bool {
		var open int
		err := d.db.QueryRow("SELECT count(*) FROM jobs WHERE id = ANY($1) AND state IN ('queued', 'running')", pgArray(under)).Scan(&open)
		return err == nil && open == 0
	})
	return time.Since(end)
}

// answersRight probes until the probe has answered right for two seconds in a row and
// answers the time from end until the last wrong answer (0: none was wrong).
func (f *faults) answersRight(end time.Time, probe func() bool) time.Duration {
	var lastWrong time.Time
	var goodSince time.Time
	for {
		at := time.Now()
		if probe() {
			if goodSince.IsZero() {
				goodSince = at
			}
			if time.Since(goodSince) >= 2*time.Second {
				break
			}
		} else {
			lastWrong, goodSince = time.Now(), time.Time{}
		}
		if time.Since(end) > recoveryBound {
			f.d.t.Fatalf("the service did not answer right within %s of the fault's end", recoveryBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lastWrong.IsZero() {
		return 0
	}
	return lastWrong.Sub(end)
}

// read is one GET that must answer 200, without retries.
func (f *faults) read(api string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	status, _, _, err := f.c.once(ctx, api, "GET", "/v1/jobs?limit=1", nil, "")
	return err == nil && status == 200
}

// write is one POST that writes to the database and must answer 201, without retries.
func (f *faults) write(api string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	status, _, _, err := f.c.once(ctx, api, "POST", "/v1/uploads", map[string]any{"filename": "probe.txt", "byte_size": 5}, newIdem())
	return err == nil && status == 201
}

// probes are the jobs the probes made: accepted jobs like the load's.
var probes struct {
	sync.Mutex
	ids []string
}

// probeFile is a ready file the job probes run on.
var probeFile string

// probeJob asks for an inspect job on one API, without retries, and answers whether it
// was accepted and ended well.
func (f *faults) probeJob(ctx context.Context) bool {
	if probeFile == "" {
		id, err := f.c.upload(ctx, "probe.txt", []byte("probe\n"))
		if err != nil {
			f.d.t.Fatal(err)
		}
		probeFile = id
	}
	api := f.d.apiURLs[int(f.c.next.Add(1))%2]
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	status, j, _, err := f.c.once(octx, api, "POST", "/v1/jobs", map[string]any{"file_id": probeFile, "operation": "inspect"}, newIdem())
	cancel()
	if err != nil || status != 202 {
		return false
	}
	probes.Lock()
	probes.ids = append(probes.ids, j["id"].(string))
	probes.Unlock()
	state, err := f.c.poll(ctx, jobBound, "/v1/jobs/"+j["id"].(string), "state", func(s string) bool { return terminal[s] })
	return err == nil && state == "succeeded"
}

// probeUpload stores a small file through a pre-signed URL, without retries.
func (f *faults) probeUpload(ctx context.Context) bool {
	api := f.d.apiURLs[int(f.c.next.Add(1))%2]
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, up, _, err := f.c.once(octx, api, "POST", "/v1/uploads", map[string]any{"filename": "probe.txt", "byte_size": 6}, newIdem())
	if err != nil || status != 201 {
		return false
	}
	req, _ := http.NewRequestWithContext(octx, "PUT", up["upload_url"].(string), strings.NewReader("probe\n"))
	headers, _ := up["upload_headers"].(map[string]any)
	for k, v := range headers {
		req.Header.Set(k, fmt.Sprint(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return false
	}
	status, file, _, err := f.c.once(octx, api, "POST", "/v1/files/"+up["file_id"].(string)+"/complete", nil, newIdem())
	return err == nil && status == 200 && file["status"] == "ready"
}

// fill writes path until its file system is full.
func fill(t interface{ Fatalf(string, ...any) }, path string) {
	fh, err := os.Create(path)
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	defer fh.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := fh.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", path, err)
			}
			return
		}
	}
}

// pgArray is a text[] literal of ids (ids hold no quotes or commas).
func pgArray(ids []string) string {
	return "{" + strings.Join(ids, ",") + "}"
}

// dumpDeliveries logs what the receiver got and the deliveries' outcomes, for a
// failure's report.
func (d *deployment) dumpDeliveries() {
	rows, err := d.db.Query("SELECT status, last_status_code, left(last_error, 200), count(*) FROM deliveries GROUP BY 1, 2, 3")
	if err != nil {
		d.t.Logf("deliveries: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var status, lastErr string
		var code, n int
		_ = rows.Scan(&status, &code, &lastErr, &n)
		d.t.Logf("deliveries: %d %s (last %d %q)", n, status, code, lastErr)
	}
}
