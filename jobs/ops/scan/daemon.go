package scan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/filemill/filemill/jobs/ops/runner"
)

// Why a clamd of filemill's own is not ready; match with errors.Is.
var (
	// ErrNoClamd: the clamd program is not installed.
	ErrNoClamd = errors.New("clamd is not installed")
	// ErrNoSignatures: the signature directory holds no database clamd can load.
	ErrNoSignatures = errors.New("no ClamAV signature database")
	// errStarting: clamd is starting (loading its signatures): wait for it.
	errStarting = errors.New("clamd is starting")
	errStopped  = errors.New("clamd was stopped")
)

// DaemonConfig is how filemill runs a clamd of its own. Zero fields take the defaults.
type DaemonConfig struct {
	// Binary is the clamd program; empty is InstalledClamd's.
	Binary string
	// DatabaseDir holds the signatures (freshclam's download); empty is the
	// DatabaseDirectory of /etc/clamav/clamd.conf, else /var/lib/clamav.
	DatabaseDir string
	// MaxStreamBytes becomes clamd's StreamMaxLength and MaxFileSize, so it scans
	// whatever the engine sends it (the engine's MaxStreamBytes).
	MaxStreamBytes int64
	// Threads is clamd's MaxThreads; default twice the CPUs.
	Threads int
	// StartTimeout bounds one start: loading a full signature database takes tens of
	// seconds on a small machine, a minute on a busy one. Default 5 minutes.
	StartTimeout time.Duration
	// HealthInterval is how often a running clamd is pinged; two missed answers in a
	// row (HealthTimeout each) and it is killed and started again. Defaults 30 s, 10 s.
	HealthInterval, HealthTimeout time.Duration
	// RunDir holds clamd's configuration, socket and temporary files (kept for the
	// next start, so a killed process leaves nothing elsewhere); empty, or too long a
	// path for a unix socket, is a private directory under the system's temporary
	// directory, removed by Close.
	RunDir string
	// RecheckInterval is how often a missing signature database is looked for again,
	// so clamd starts once freshclam has run, without a restart. Default 30 s.
	RecheckInterval time.Duration
	Logger          *slog.Logger
}

// maxSocketPath is the longest unix socket path every system takes (108 bytes on
// Linux, 104 on the BSDs, the terminating NUL included).
const maxSocketPath = 100

// Where Debian's clamav-daemon installs clamd and its configuration (read for its
// DatabaseDirectory).
const (
	debianClamd     = "/usr/sbin/clamd"
	systemClamdConf = "/etc/clamav/clamd.conf"
)

// InstalledClamd is the clamd program on this machine (/usr/sbin/clamd, else clamd on
// PATH), or "" when there is none.
func InstalledClamd() string {
	if _, err := os.Stat(debianClamd); err == nil {
		return debianClamd
	}
	if p, err := exec.LookPath("clamd"); err == nil {
		return p
	}
	return ""
}

func (c DaemonConfig) withDefaults() DaemonConfig {
	if c.Binary == "" {
		if c.Binary = InstalledClamd(); c.Binary == "" {
			c.Binary = debianClamd // for the message saying it is missing
		}
	}
	if c.DatabaseDir == "" {
		c.DatabaseDir = DatabaseDirOf(systemClamdConf)
	}
	if c.MaxStreamBytes <= 0 {
		c.MaxStreamBytes = DefaultConfig().MaxStreamBytes
	}
	if c.Threads <= 0 {
		c.Threads = 2 * runtime.NumCPU()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 5 * time.Minute
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = 30 * time.Second
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = 10 * time.Second
	}
	if c.RecheckInterval <= 0 {
		c.RecheckInterval = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// DatabaseDirOf is the DatabaseDirectory a clamd configuration file names, or
// /var/lib/clamav (clamd's own default) when it names none or cannot be read.
func DatabaseDirOf(conf string) string {
	if b, err := os.ReadFile(conf); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == "DatabaseDirectory" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "/var/lib/clamav"
}

// Daemon is a clamd of filemill's own, for a machine where clamd is installed but
// not running (the embedded default of `filemill serve`). It is kept the way the
// runner keeps LibreOffice — its own process group, killed with filemill — but it is
// one daemon every scan shares, not a pool of instances a run takes in turn: it is
// started at once, pinged every HealthInterval, killed when it stops answering and
// started again after it exits (after 1 s, doubling up to a minute while starts keep
// failing). While its signature database is missing it waits for one.
type Daemon struct {
	cfg    DaemonConfig
	dir    string // configuration, socket and clamd's temporary files
	owned  bool   // dir is a temporary directory of its own, removed by Close
	client *clamd

	mu      sync.Mutex
	err     error         // why clamd is not ready; nil when it is
	pid     int           // the running clamd, 0 when none
	changed chan struct{} // closed at the next change of err

	stop chan struct{}
	done chan struct{}
}

// StartDaemon prepares clamd's configuration and starts keeping it in the
// background. Errors are only those of preparing a private directory; why clamd is
// not ready (not installed, no signatures, failing to start) is Ready's answer.
func StartDaemon(cfg DaemonConfig) (*Daemon, error) {
	cfg = cfg.withDefaults()
	dir, owned := cfg.RunDir, false
	if dir == "" || len(filepath.Join(dir, "clamd.sock")) > maxSocketPath {
		var err error
		if dir, err = os.MkdirTemp("", "filemill-clamd-"); err != nil {
			return nil, fmt.Errorf("scan: clamd directory: %w", err)
		}
		owned = true
	}
	fail := func(err error) (*Daemon, error) {
		if owned {
			os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("scan: clamd directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return fail(err)
	}
	d := &Daemon{cfg: cfg, dir: dir, owned: owned, err: errStarting, changed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}),
		client: &clamd{network: "unix", addr: filepath.Join(dir, "clamd.sock"), dialTimeout: 5 * time.Second}}
	conf := []string{
		"LocalSocket " + d.client.addr,
		"DatabaseDirectory " + cfg.DatabaseDir,
		"TemporaryDirectory " + filepath.Join(dir, "tmp"),
		"Foreground yes",
		fmt.Sprintf("StreamMaxLength %d", cfg.MaxStreamBytes),
		fmt.Sprintf("MaxFileSize %d", cfg.MaxStreamBytes),
		fmt.Sprintf("MaxScanSize %d", 4*cfg.MaxStreamBytes),
		// A file beyond the limits is reported, never passed unscanned.
		"AlertExceedsMax yes",
		fmt.Sprintf("MaxThreads %d", cfg.Threads),
		// Signatures freshclam updates are loaded within ten minutes.
		"SelfCheck 600",
	}
	if err := os.WriteFile(d.conf(), []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return fail(err)
	}
	go d.keep()
	return d, nil
}

func (d *Daemon) conf() string { return filepath.Join(d.dir, "clamd.conf") }

// Address is clamd's socket, for the engine's ClamdAddress.
func (d *Daemon) Address() string { return "unix:" + d.client.addr }

// DatabaseDir is where clamd loads its signatures from.
func (d *Daemon) DatabaseDir() string { return d.cfg.DatabaseDir }

// PID is the running clamd's process id, 0 when none runs.
func (d *Daemon) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pid
}

// Ready is nil once clamd answers. While it starts (loading its signatures, or again
// after it exited) Ready waits, at most until ctx ends; otherwise it says at once, in
// a sentence an operator can act on, why clamd does not run.
func (d *Daemon) Ready(ctx context.Context) error {
	for {
		d.mu.Lock()
		err, changed := d.err, d.changed
		d.mu.Unlock()
		if !errors.Is(err, errStarting) {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("clamd is still starting (loading its signatures from %s): %w", d.cfg.DatabaseDir, ctx.Err())
		}
	}
}

func (d *Daemon) set(err error, pid int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err, d.pid = err, pid
	close(d.changed)
	d.changed = make(chan struct{})
}

// Close stops clamd, waits until it is gone and removes its socket (its directory,
// when it is a temporary one).
func (d *Daemon) Close() {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	<-d.done
	if d.owned {
		os.RemoveAll(d.dir)
	} else {
		os.Remove(d.client.addr)
	}
}

// keep runs clamd until Close: waits for signatures, starts it, watches it, and
// starts it again after it exits.
func (d *Daemon) keep() {
	defer close(d.done)
	defer d.set(errStopped, 0)
	log := d.cfg.Logger
	backoff := time.Second
	var last string // the last failure logged, so a repeating one is logged once
	for {
		if err := d.prerequisites(); err != nil {
			if err.Error() != last {
				log.Warn("scan: clamd not started", "reason", err.Error())
				last = err.Error()
			}
			d.set(err, 0)
			if !d.sleep(d.cfg.RecheckInterval) {
				return
			}
			continue
		}
		d.set(errStarting, 0)
		p, err := d.start()
		if errors.Is(err, errStopped) {
			return
		}
		if err != nil {
			if err.Error() != last {
				log.Warn("scan: clamd failed to start; trying again", "error", err.Error(), "retry_in", backoff.String())
				last = err.Error()
			}
			d.set(err, 0)
			if !d.sleep(backoff) {
				return
			}
			backoff = min(2*backoff, time.Minute)
			continue
		}
		last = ""
		log.Info("scan: clamd started", "pid", p.PID(), "database", d.cfg.DatabaseDir, "socket", d.client.addr)
		d.set(nil, p.PID())
		started := time.Now()
		err = d.watch(p)
		if errors.Is(err, errStopped) {
			return
		}
		log.Warn("scan: clamd stopped; starting it again", "error", err.Error())
		// Scans wait for the new clamd rather than fail while it starts.
		d.set(errStarting, 0)
		if time.Since(started) > time.Minute {
			backoff = time.Second // it ran well: this is not a start that keeps failing
		}
		if !d.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// sleep waits for d, false when Close came first.
func (d *Daemon) sleep(dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.stop:
		return false
	}
}

// signatureExts are the database files clamd loads (official .cvd/.cld/.cud, and
// the unofficial formats); others (.info, .fp, .ign) load nothing by themselves.
var signatureExts = map[string]bool{".cvd": true, ".cld": true, ".cud": true, ".hdb": true, ".hsb": true,
	".hdu": true, ".hsu": true, ".mdb": true, ".msb": true, ".mdu": true, ".msu": true, ".ndb": true,
	".ndu": true, ".ldb": true, ".ldu": true, ".idb": true, ".cdb": true, ".cbc": true, ".pdb": true,
	".gdb": true, ".wdb": true, ".ftm": true, ".yar": true, ".yara": true}

// prerequisites says, in a sentence an operator can act on, what keeps clamd from
// starting here.
func (d *Daemon) prerequisites() error {
	if _, err := os.Stat(d.cfg.Binary); err != nil {
		return fmt.Errorf("%w (%s): install clamav-daemon and clamav-freshclam, or run clamd elsewhere and set FILEMILL_CLAMD_ADDRESS", ErrNoClamd, d.cfg.Binary)
	}
	entries, _ := os.ReadDir(d.cfg.DatabaseDir)
	for _, e := range entries {
		if signatureExts[strings.ToLower(filepath.Ext(e.Name()))] {
			return nil
		}
	}
	return fmt.Errorf("%w in %s (Debian's packages install none): run freshclam (package clamav-freshclam) "+
		"to download ClamAV's signatures; scanning starts by itself once they are there", ErrNoSignatures, d.cfg.DatabaseDir)
}

// start starts clamd and waits until it answers PING.
func (d *Daemon) start() (*runner.Process, error) {
	_ = os.Remove(d.client.addr) // a socket left by a clamd that was killed
	p, err := runner.Start(runner.Cmd{Path: d.cfg.Binary, Args: []string{"-c", d.conf()}})
	if err != nil {
		return nil, fmt.Errorf("start clamd: %w", err)
	}
	deadline := time.NewTimer(d.cfg.StartTimeout)
	defer deadline.Stop()
	// clamd announces nothing when its database is loaded: its socket answering is
	// the sign, looked for every 50 ms.
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-p.Done():
			return nil, fmt.Errorf("clamd exited while starting: %w", p.Wait())
		case <-d.stop:
			p.Kill()
			return nil, errStopped
		case <-deadline.C:
			p.Kill()
			return nil, fmt.Errorf("clamd did not answer within %s of its start", d.cfg.StartTimeout)
		case <-poll.C:
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := d.client.ping(ctx)
			cancel()
			if err == nil {
				return p, nil
			}
		}
	}
}

// watch returns when clamd exits, stops answering (it is killed then) or Close is
// called (errStopped, once it is gone).
func (d *Daemon) watch(p *runner.Process) error {
	tick := time.NewTicker(d.cfg.HealthInterval)
	defer tick.Stop()
	missed := 0
	for {
		select {
		case <-p.Done():
			if err := p.Wait(); err != nil {
				return fmt.Errorf("clamd exited: %w", err)
			}
			return errors.New("clamd exited")
		case <-d.stop:
			p.Kill()
			return errStopped
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), d.cfg.HealthTimeout)
			err := d.client.ping(ctx)
			cancel()
			if err == nil {
				missed = 0
				continue
			}
			if missed++; missed >= 2 {
				p.Kill()
				return fmt.Errorf("clamd stopped answering and was killed: %w", err)
			}
		}
	}
}
