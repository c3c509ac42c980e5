package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/domain"
)

// Workers tell which engine families they run through Redis: each worker process
// keeps a hash of its families under a key that expires unless it is renewed, and lists
// itself in a set. An operation is available while a live worker runs its engines; a
// worker that dies stops counting when its key expires. Each family's value is a JSON
// object of what admission needs to know of it (version, languages, longest document);
// a plain string is the version alone, as workers of earlier releases wrote it.
const (
	engineWorkersKey   = "fm:engine-workers" // set of worker ids
	engineWorkerPrefix = "fm:engine-worker:" // hash per worker: family -> its EngineInfo as JSON
)

// Heartbeat timing: a worker renews its announcement every heartbeatEvery; it is
// taken for dead after heartbeatTTL without renewal. After Redis comes back empty, the
// announcements are back within heartbeatEvery.
const (
	heartbeatEvery = 2 * time.Second
	heartbeatTTL   = 6 * time.Second
)

// Engine checks: each engine is checked when the worker starts and every checkEvery
// after, apart from the heartbeat (a check may start a tool, or convert a document),
// each bounded by checkTimeout.
const (
	checkEvery   = 30 * time.Second
	checkTimeout = 2 * time.Minute
)

// CheckedEngine is what an engine tells beyond running: its version, and whether what
// it needs is present and working here (a tool, a daemon, a library).
type CheckedEngine interface {
	Version() string
	Check(ctx context.Context) error
}

// AdvertiseEngines makes the server announce the engine families it runs, every
// heartbeatEvery from Start until Shutdown. An engine is announced once its first check
// passed, and left out (and logged) while its latest check fails, so its operations
// show as unavailable instead of failing. The channel returned receives, once, the
// outcome of the first round of checks: each family's error, nil when it passed.
func (s *Server) AdvertiseEngines(engines map[string]domain.Engine) <-chan map[string]error {
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s:%d:%s", host, os.Getpid(), domain.NewID(""))
	key := engineWorkerPrefix + id
	var mu sync.Mutex
	passing := map[string]domain.EngineInfo{} // for the engines whose check passed
	failing := map[string]bool{}
	first := map[string]error{}
	for name, e := range engines {
		if _, ok := e.(CheckedEngine); !ok {
			passing[name] = domain.DescribeEngine(e)
			first[name] = nil
		}
	}
	firstRound := make(chan map[string]error, 1)
	var once sync.Once
	s.Locally(checkEvery, func(ctx context.Context) {
		var wg sync.WaitGroup
		for name, e := range engines {
			ce, ok := e.(CheckedEngine)
			if !ok {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, checkTimeout)
				err := ce.Check(cctx)
				cancel()
				// Read with the check: languages may be installed while it runs.
				info := domain.DescribeEngine(e)
				info.Version = ce.Version()
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil && !failing[name]:
					s.log.Warn("engine unavailable", "engine", name, "error", err.Error())
				case err == nil && failing[name]:
					s.log.Info("engine available again", "engine", name)
				}
				failing[name] = err != nil
				if _, seen := first[name]; !seen {
					first[name] = err
				}
				if err != nil {
					delete(passing, name)
				} else {
					passing[name] = info
				}
			}()
		}
		wg.Wait()
		if ctx.Err() == nil {
			once.Do(func() {
				mu.Lock()
				defer mu.Unlock()
				firstRound <- first
			})
		}
	})
	s.Locally(heartbeatEvery, func(ctx context.Context) {
		mu.Lock()
		fields := make(map[string]any, len(passing))
		for name, info := range passing {
			if !s.inService() {
				break // a worker out of service announces nothing: it takes no jobs
			}
			raw, err := json.Marshal(info)
			if err != nil {
				continue // plain fields always marshal
			}
			fields[name] = string(raw)
		}
		mu.Unlock()
		pipe := s.rdb.TxPipeline()
		pipe.Del(ctx, key)
		if len(fields) > 0 {
			pipe.HSet(ctx, key, fields)
			pipe.PExpire(ctx, key, heartbeatTTL)
			pipe.SAdd(ctx, engineWorkersKey, id)
		} else {
			pipe.SRem(ctx, engineWorkersKey, id)
		}
		if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
			s.repeated.Log(ctx, slog.LevelWarn, "engine-heartbeat", "engine heartbeat not written", "error", err.Error())
		}
	})
	s.onShutdown(func() {
		// Leave at once rather than when the key expires.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.rdb.Del(ctx, key)
		s.rdb.SRem(ctx, engineWorkersKey, id)
	})
	return firstRound
}

// Directory reads which engine families live workers run. It implements
// domain.EngineDirectory.
type Directory struct {
	rdb redis.UniversalClient
	ttl time.Duration

	mu     sync.Mutex
	cached map[string]domain.EngineInfo
	at     time.Time
}

var _ domain.EngineDirectory = (*Directory)(nil)

// NewDirectory returns a directory over rdb that reads Redis at most once per ttl.
func NewDirectory(rdb redis.UniversalClient, ttl time.Duration) *Directory {
	return &Directory{rdb: rdb, ttl: ttl}
}

// LiveEngines returns the families some live worker runs, with the version the first
// one reports, how many run it, and what all of them can do: the languages every one
// has, the longest document every one reads.
func (d *Directory) LiveEngines(ctx context.Context) (map[string]domain.EngineInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cached != nil && time.Since(d.at) < d.ttl {
		return d.cached, nil
	}
	ids, err := d.rdb.SMembers(ctx, engineWorkersKey).Result()
	if err != nil {
		return nil, fmt.Errorf("live engines: %w", err)
	}
	sort.Strings(ids)
	pipe := d.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, engineWorkerPrefix+id)
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("live engines: %w", err)
		}
	}
	out := map[string]domain.EngineInfo{}
	var gone []any
	for i, c := range cmds {
		fields := c.Val()
		if len(fields) == 0 {
			gone = append(gone, ids[i]) // its key expired: the worker died
			continue
		}
		for family, raw := range fields {
			out[family] = combineEngineInfo(out[family], parseEngineInfo(raw))
		}
	}
	if len(gone) > 0 {
		d.rdb.SRem(ctx, engineWorkersKey, gone...)
	}
	d.cached, d.at = out, time.Now()
	return out, nil
}

// parseEngineInfo reads a family's value in a worker's hash: JSON, or the version alone
// from a worker of an earlier release.
func parseEngineInfo(raw string) domain.EngineInfo {
	var info domain.EngineInfo
	if !strings.HasPrefix(raw, "{") || json.Unmarshal([]byte(raw), &info) != nil {
		return domain.EngineInfo{Version: raw}
	}
	return info
}

// combineEngineInfo adds one more worker's report of a family to what the workers
// before it reported. Any of them may take a job, so a language counts only when each
// that tells its languages has it, and the page limit is the lowest told.
func combineEngineInfo(acc, w domain.EngineInfo) domain.EngineInfo {
	if acc.Workers == 0 {
		w.Workers = 1
		return w
	}
	acc.Workers++
	switch {
	case w.Languages == nil:
	case acc.Languages == nil:
		acc.Languages = w.Languages
	default:
		acc.Languages = slices.DeleteFunc(acc.Languages, func(l string) bool { return !slices.Contains(w.Languages, l) })
	}
	if w.MaxPages > 0 && (acc.MaxPages == 0 || w.MaxPages < acc.MaxPages) {
		acc.MaxPages = w.MaxPages
	}
	return acc
}

// DefaultWorkerPollInterval is how often an idle worker looks for jobs that no enqueue
// announced (an enqueue wakes it at once): retries, a lost wake-up.
const DefaultWorkerPollInterval = 100 * time.Millisecond

// familyDefaults are how a worker runs each engine family unless told otherwise: jobs
// at once per CPU (light work more, heavy work — a LibreOffice instance or a
// multi-page OCR per job — less), how often an idle pool looks for jobs as a multiple
// of the worker's poll interval (the families whose jobs take seconds look less often:
// an idle worker's cost is mostly this looking), and the weight that puts a job
// needing several families in the pool of its heaviest.
var familyDefaults = map[string]struct {
	perCPU       float64
	pollMultiple int
	weight       int
}{
	"inspect": {2, 1, 0},
	"scan":    {1, 3, 1},
	"pdf":     {1, 3, 2},
	"image":   {1, 3, 2},
	"render":  {1, 3, 2},
	"ai":      {1, 10, 3},
	"ocr":     {0.5, 10, 4},
	"office":  {1, 10, 5},
}

// DefaultFamilySettings is how a worker with cpus processors and the given poll
// interval runs family's jobs by default. A family not listed runs one per CPU.
func DefaultFamilySettings(family string, cpus int, poll time.Duration) FamilySettings {
	d, ok := familyDefaults[family]
	if !ok {
		d.perCPU, d.pollMultiple = 1, 1
	}
	return FamilySettings{Concurrency: max(1, int(d.perCPU*float64(cpus))),
		PollInterval: time.Duration(d.pollMultiple) * poll, Weight: d.weight}
}

// FamilySettings is how a worker runs one engine family's jobs.
type FamilySettings struct {
	// Concurrency is how many of its jobs run at once.
	Concurrency int
	// PollInterval is how often its idle pool looks for jobs (zero: the worker's):
	// families whose jobs take seconds can look less often than those of milliseconds.
	PollInterval time.Duration
	// Weight ranks families by how long their jobs take: a job needing several
	// families runs in the pool of its heaviest.
	Weight int
}

// EnginePools returns the pools of a worker running the given engine families: a
// pool per family, serving the queues of the engine sets whose heaviest family it is
// and all of whose families the worker runs, so it never takes a job it cannot run and
// slow work never holds the slots of fast work. A pool runs Concurrency of its family's
// jobs at once.
func EnginePools(reg *domain.Registry, have map[string]domain.Engine, settings func(family string) FamilySettings) []Pool {
	byFamily := map[string]*Pool{}
	for _, set := range reg.EngineSets() {
		heaviest := ""
		for _, f := range set {
			if have[f] == nil {
				heaviest = ""
				break
			}
			if heaviest == "" || settings(f).Weight > settings(heaviest).Weight ||
				settings(f).Weight == settings(heaviest).Weight && f > heaviest {
				heaviest = f
			}
		}
		if heaviest == "" {
			continue
		}
		p := byFamily[heaviest]
		if p == nil {
			fs := settings(heaviest)
			p = &Pool{Name: heaviest, Queues: map[string]int{}, Concurrency: max(1, fs.Concurrency), PollInterval: fs.PollInterval}
			byFamily[heaviest] = p
		}
		// A job needing fewer families is lighter: it goes first.
		p.Queues[domain.QueueName(set)] = max(1, 4-len(set))
	}
	out := make([]Pool, 0, len(byFamily))
	for _, p := range byFamily {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	return out
}
