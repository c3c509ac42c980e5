package office

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/memcg"
	"github.com/filemill/filemill/jobs/ops/runner"
)

//go:embed helper.py
var helperPy []byte

// profileSettings is the profile every instance starts from: macros never run, links
// to other files and the network are never updated, formulas are not recalculated on
// load (a recalculation could call WEBSERVICE), and nothing is written back (no
// backups, no recovery data, no locks).
//
// The office also loses its network content providers (http, https, WebDAV, FTP,
// CMIS), so no URL in a document can be fetched whatever path asks for it: Impress
// and Draw load linked images and OLE links on import with no referrer, which
// BlockUntrustedRefererLinks does not stop, and UpdateDocMode does not cover.
const profileSettings = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="WarnAlienFormat" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Writer/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>2</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>2</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>1</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>1</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="UseLocking" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="CreateBackup" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Recovery/AutoSave"><prop oor:name="Enabled" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Recovery/RecoveryInfo"><prop oor:name="Enabled" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
<!-- The WebDAV (http, https, webdav), FTP and CMIS providers, by their names in LibreOffice's main.xcd. -->
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider3" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider4" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider4a" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider12" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider12a" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider12b" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider6" oor:op="remove"/></item>
<item oor:path="/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"><node oor:name="Provider43" oor:op="remove"/></item>
</oor:items>
`

// instance is one LibreOffice with the helper that talks UNO to it, as one process
// group: killing the group ends both.
type instance struct {
	p         *runner.Process
	in        io.WriteCloser
	out       *bufio.Reader
	officePID int
	exchange  string       // the sandbox's exchange directory; "" when unconfined
	mem       *memcg.Group // bounds the instance's memory; nil where no cgroup can
}

var _ runner.Instance = (*instance)(nil)

// reply is one answer line of the helper.
type reply struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Detail    string `json:"detail"`
	Kind      string `json:"kind"`
	Ready     bool   `json:"ready"`
	OfficePID int    `json:"office_pid"`
}

// request is one request line to the helper.
type request struct {
	Op            string `json:"op"`
	In            string `json:"in,omitempty"`
	Out           string `json:"out,omitempty"`
	Import        string `json:"import,omitempty"`
	ImportOptions string `json:"import_options,omitempty"`
	To            string `json:"to,omitempty"`
}

// maxReplyBytes bounds one answer line.
const maxReplyBytes = 64 << 10

// read reads one answer. It blocks until the helper answers or dies: a hung helper is
// killed by the supervisor at the run's deadline, which ends the read.
func (i *instance) read() (*reply, error) {
	line, err := i.out.ReadSlice('\n')
	if err != nil {
		return nil, fmt.Errorf("office helper: %w: read: %w (stderr: %s)", runner.ErrBroken, err, i.p.Stderr())
	}
	if len(line) > maxReplyBytes {
		return nil, fmt.Errorf("office helper: %w: answer too long", runner.ErrBroken)
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("office helper: %w: bad answer %q", runner.ErrBroken, line)
	}
	if !r.OK && r.Error == "broken" {
		return nil, fmt.Errorf("office helper: %w: %s", runner.ErrBroken, r.Detail)
	}
	return &r, nil
}

func (i *instance) call(req request) (*reply, error) {
	b, _ := json.Marshal(req)
	if _, err := i.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("office helper: %w: write: %w", runner.ErrBroken, err)
	}
	return i.read()
}

// callCtx is call bounded by ctx; on expiry the caller must stop the instance (the
// answer may still come and would be read as the next one's).
func (i *instance) callCtx(ctx context.Context, req request) (*reply, error) {
	type res struct {
		r   *reply
		err error
	}
	c := make(chan res, 1)
	go func() {
		r, err := i.call(req)
		c <- res{r, err}
	}()
	select {
	case r := <-c:
		return r.r, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("office helper: %w: %w", runner.ErrBroken, ctx.Err())
	}
}

func (i *instance) Healthy(ctx context.Context) error {
	r, err := i.callCtx(ctx, request{Op: "ping"})
	if err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("office helper: ping: %s", r.Detail)
	}
	return nil
}

func (i *instance) Stop() {
	i.p.Kill()
	i.in.Close()
	if i.mem != nil {
		if err := i.mem.Remove(); err != nil {
			slog.Warn("office: removing an instance's memory cgroup", "error", err.Error())
		}
	}
}

// oomKills counts the instance's processes the kernel killed for its memory bound.
func (i *instance) oomKills() int64 {
	if i.mem == nil {
		return 0
	}
	n, err := i.mem.OOMKills()
	// A group removed as its instance was stopped at the run's deadline has no count.
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		slog.Warn("office: reading an instance's memory cgroup", "error", err.Error())
	}
	return n
}

func (i *instance) Done() <-chan struct{} { return i.p.Done() }
func (i *instance) PID() int              { return i.p.PID() }

var pipeSeq atomic.Int64

// pool is the supervised set of LibreOffice instances.
type pool struct {
	cfg    Config
	root   string // profiles and the helper script live here
	ownDir bool
	box    sandbox
	mem    *memcg.Parent // nil where instances cannot get a memory cgroup
	sup    *runner.Supervisor[*instance]

	once    sync.Once
	initErr error
}

func newPool(cfg Config) (*pool, error) {
	KillOrphans()
	p := &pool{cfg: cfg, root: cfg.ProfileDir}
	sup, err := runner.NewSupervisor(runner.SupervisorConfig{
		Size:            cfg.Instances,
		MaxUses:         cfg.ConversionsPerInstance,
		StartTimeout:    cfg.StartTimeout,
		HealthTimeout:   cfg.HealthTimeout,
		HealthAfterIdle: cfg.HealthAfterIdle,
		QueueTimeout:    cfg.QueueTimeout,
		MaxQueue:        cfg.MaxQueue,
	}, p.start)
	if err != nil {
		return nil, err
	}
	p.sup = sup
	if p.mem, err = memcg.Open(); err != nil {
		slog.Warn("office: LibreOffice instances are not bounded per job, only by their address-space cap (FILEMILL_OFFICE_MEMORY_LIMIT): "+
			"bounding them needs root and a memory cgroup (cgroup v2 with the memory controller, or a v1 memory hierarchy)", "error", err.Error())
	}
	return p, nil
}

// prepare creates the root directory and writes the helper script, once.
func (p *pool) prepare() error {
	p.once.Do(func() {
		if p.root == "" {
			d, err := os.MkdirTemp("", "filemill-office-")
			if err != nil {
				p.initErr = err
				return
			}
			p.root, p.ownDir = d, true
		} else if err := os.MkdirAll(p.root, 0o700); err != nil {
			p.initErr = err
			return
		}
		if p.initErr = os.WriteFile(filepath.Join(p.root, "helper.py"), helperPy, 0o600); p.initErr != nil {
			return
		}
		p.box, p.initErr = newSandbox(p.cfg)
	})
	return p.initErr
}

// memoryLimit is the bound of each instance's memory cgroup: the job's, within the
// instance's own cap.
func (p *pool) memoryLimit() int64 {
	if m := p.cfg.JobMemoryLimit; m > 0 {
		return min(m, p.cfg.MemoryLimit)
	}
	return p.cfg.MemoryLimit
}

// profile returns the slot's profile directory, seeded with the locked-down settings.
// A profile that failed to start is discarded first (fresh=true).
func (p *pool) profile(slot int, fresh bool) (string, error) {
	dir := filepath.Join(p.root, "profile-"+strconv.Itoa(slot))
	if fresh {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
	user := filepath.Join(dir, "user")
	if err := os.MkdirAll(user, 0o700); err != nil {
		return "", err
	}
	// Rewritten before every start: LibreOffice may have saved other values into it.
	if err := os.WriteFile(filepath.Join(user, "registrymodifications.xcu"), []byte(profileSettings), 0o600); err != nil {
		return "", err
	}
	return dir, nil
}

func (p *pool) start(ctx context.Context, slot int) (*instance, error) {
	if err := p.prepare(); err != nil {
		return nil, fmt.Errorf("office: prepare %s: %w", p.root, err)
	}
	inst, err := p.startOnce(ctx, slot, false)
	if err != nil && ctx.Err() == nil {
		// A profile left broken by a killed instance is the usual cause: start afresh.
		inst, err = p.startOnce(ctx, slot, true)
	}
	return inst, err
}

func (p *pool) startOnce(ctx context.Context, slot int, fresh bool) (*instance, error) {
	prof, err := p.profile(slot, fresh)
	if err != nil {
		return nil, fmt.Errorf("office: profile: %w", err)
	}
	timeout := p.cfg.StartTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	// Unique per start across every pool of the process: an instance that found
	// another's pipe would convert on the wrong office.
	seq := pipeSeq.Add(1)
	pipe := fmt.Sprintf("filemill-%d-%d-%d", os.Getpid(), slot, seq)
	helper, exchange := filepath.Join(p.root, "helper.py"), ""
	path, args := p.cfg.Python, []string{helper, p.cfg.Soffice, prof, pipe, strconv.FormatFloat(timeout.Seconds(), 'f', 1, 64)}
	if p.box.on() {
		exchange = filepath.Join(p.root, "exchange-"+strconv.Itoa(slot))
		tmp := filepath.Join(p.root, "tmp-"+strconv.Itoa(slot))
		for _, d := range []string{exchange, tmp} {
			if err := emptyDir(d); err != nil {
				return nil, fmt.Errorf("office: sandbox directory: %w", err)
			}
		}
		args[0], args[2] = boxHelper, boxProfile
		path, args = p.box.wrap(boxDirs{profile: prof, exchange: exchange, tmp: tmp, helper: helper}, p.cfg.Python, args)
	}
	var mem *memcg.Group
	cgroup := ""
	if p.mem != nil {
		if mem, err = p.mem.NewGroup(fmt.Sprintf("office-%d-%d", slot, seq), p.memoryLimit()); err != nil {
			return nil, fmt.Errorf("office: memory cgroup: %w", err)
		}
		cgroup = mem.Dir()
	}
	proc, in, out, err := runner.StartPiped(runner.Cmd{
		Path:   path,
		Args:   args,
		Env:    officeEnv(),
		Limits: runner.Limits{Memory: p.cfg.MemoryLimit},
		Cgroup: cgroup,
	})
	if err != nil {
		if mem != nil {
			_ = mem.Remove()
		}
		return nil, err
	}
	inst := &instance{p: proc, in: in, out: bufio.NewReaderSize(out, maxReplyBytes), exchange: exchange, mem: mem}
	type res struct {
		r   *reply
		err error
	}
	c := make(chan res, 1)
	go func() {
		r, err := inst.read()
		c <- res{r, err}
	}()
	select {
	case r := <-c:
		if r.err != nil || !r.r.Ready {
			inst.Stop()
			if r.err == nil {
				r.err = fmt.Errorf("office helper: not ready: %s", r.r.Detail)
			}
			return nil, r.err
		}
		inst.officePID = r.r.OfficePID
	case <-ctx.Done():
		inst.Stop()
		return nil, fmt.Errorf("office: start: %w (stderr: %s)", ctx.Err(), proc.Stderr())
	}
	return inst, nil
}

// officeEnv is the helper's environment: a program's (runner.ProgramEnv), with no
// display, so nothing reaches for a screen.
func officeEnv() []string { return runner.ProgramEnv("SAL_USE_VCLPLUGIN=svp") }

// convert runs one conversion on a free instance. Errors: *docError for a document
// LibreOffice refused; resource_limit_exceeded (wrapped with runner.ErrBroken, the
// instance is replaced) for one that failed as the kernel killed in the instance for
// its memory bound; runner errors otherwise.
func (p *pool) convert(ctx context.Context, req request) (*reply, error) {
	var r *reply
	err := p.sup.Run(ctx, p.cfg.Timeout, func(ctx context.Context, inst *instance) error {
		kills := inst.oomKills()
		var err error
		if inst.exchange == "" {
			r, err = inst.call(req)
		} else {
			err = inst.convertBoxed(req, &r)
		}
		if (err != nil || !r.OK) && inst.oomKills() > kills {
			le := domain.ResourceLimit(domain.LimitMemory, inst.mem.Limit())
			le.Cause = err
			if err == nil {
				le.Cause = &docError{kind: r.Error, detail: r.Detail}
			}
			return fmt.Errorf("office: out of memory: %w: %w", runner.ErrBroken, le)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !r.OK {
		return r, &docError{kind: r.Error, detail: r.Detail}
	}
	return r, nil
}

// convertBoxed runs one conversion on a confined instance, through its exchange
// directory, which is left empty whatever happens: the next document on this instance
// must not find this one's.
func (i *instance) convertBoxed(req request, r **reply) error {
	defer func() {
		if err := clearDir(i.exchange); err != nil {
			slog.Warn("office: clearing the exchange directory", "dir", i.exchange, "error", err.Error())
		}
	}()
	box, err := stage(i.exchange, req)
	if err != nil {
		return err
	}
	if *r, err = i.call(box); err != nil || !(*r).OK {
		return err
	}
	return collect(i.exchange, req)
}

func (p *pool) close() {
	p.sup.Close()
	if p.mem != nil {
		if err := p.mem.Close(); err != nil {
			slog.Warn("office: removing the memory cgroups", "error", err.Error())
		}
	}
	if p.ownDir {
		os.RemoveAll(p.root)
	}
}

// docError is LibreOffice refusing a document (encrypted, corrupted, unsupported).
type docError struct {
	kind   string
	detail string
}

func (e *docError) Error() string { return "office: " + e.kind + ": " + e.detail }
