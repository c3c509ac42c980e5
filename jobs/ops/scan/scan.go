package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filemill/filemill/domain"
)

// EngineName is the engine family (and queue) of the scan operation.
const EngineName = "scan"

// OperationScan is the operation this engine serves.
const OperationScan = "scan"

// ArtifactName is the report's download name; ArtifactMIMEType its type.
const (
	ArtifactName     = "scan.json"
	ArtifactMIMEType = "application/json"
)

// RulesVersion changes whenever a built-in rule changes what it reports.
const RulesVersion = "1"

// Verdict is a scan's conclusion.
type Verdict string

// Verdicts: malicious when any finding is of high severity, suspicious when any is
// medium, clean otherwise (low findings are notes).
const (
	Clean      Verdict = "clean"
	Suspicious Verdict = "suspicious"
	Malicious  Verdict = "malicious"
)

// Severities of findings.
const (
	SeverityLow    = "low"
	SeverityMedium = "medium"
	SeverityHigh   = "high"
)

// Finding is one thing a scan found. Rule is a stable identifier ("clamav", "eicar",
// "pdf.javascript", ...); Message says where and what in a sentence.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// Report is the content of scan.json.
type Report struct {
	Verdict      Verdict   `json:"verdict"`
	Findings     []Finding `json:"findings"`
	ScannedBytes int64     `json:"scanned_bytes"`
	// Engines names what scanned: the ClamAV version and signature database, and the
	// built-in rules' version.
	Engines map[string]string `json:"engines"`
}

// Config says where clamd is and bounds the built-in rules' work. Zero fields take
// the defaults.
type Config struct {
	// ClamdAddress is clamd's socket: unix:/path (or just /path) or tcp://host:port.
	// Set in production from FILEMILL_CLAMD_ADDRESS.
	ClamdAddress string
	// ClamdDialTimeout bounds connecting to clamd.
	ClamdDialTimeout time.Duration
	// MaxStreamBytes is the largest file sent to clamd: set it to clamd's
	// StreamMaxLength, MaxFileSize and MaxScanSize (25 MiB in Debian's clamd.conf).
	// A larger file fails the scan with unsupported_input rather than going unscanned.
	MaxStreamBytes int64
	// ClamdInstream streams the bytes (INSTREAM) to a clamd on a unix socket too.
	// By default a local clamd is handed the open file (FILDES) and reads it itself:
	// no copy through the socket, no temporary file in clamd. Over TCP it is always
	// INSTREAM.
	ClamdInstream bool
	// MaxRatio is the decompressed-to-compressed ratio above which an archive of at
	// least RatioMinBytes (decompressed) is a bomb.
	MaxRatio      float64
	RatioMinBytes int64
	// MaxDepth is how deep archives may nest inside each other.
	MaxDepth int
	// MaxEntries is how many archive entries a file may hold, all levels counted.
	MaxEntries int
	// MaxInspectBytes bounds the decompressed bytes the built-in rules read in one
	// scan; MaxEntryBytes the size of one archive entry (or PDF object stream) read
	// whole for a closer look.
	MaxInspectBytes int64
	MaxEntryBytes   int64
	// Logger receives clamd's own error messages, which never reach clients.
	Logger *slog.Logger
	// Daemon, when set, is the clamd of filemill's own this engine uses (ClamdAddress
	// is then its socket): Check says why it does not run, and a scan waits while it
	// starts.
	Daemon *Daemon
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		ClamdAddress:     "unix:/run/clamav/clamd.ctl",
		ClamdDialTimeout: 5 * time.Second,
		MaxStreamBytes:   25 << 20,
		MaxRatio:         100,
		RatioMinBytes:    64 << 20,
		MaxDepth:         5,
		MaxEntries:       10_000,
		MaxInspectBytes:  256 << 20,
		MaxEntryBytes:    32 << 20,
	}
}

// Validate reports the first setting that cannot work, naming it.
func (c Config) Validate() error {
	if c.ClamdAddress != "" {
		if _, _, err := parseClamdAddress(c.ClamdAddress); err != nil {
			return fmt.Errorf("scan: ClamdAddress: %v", err)
		}
	}
	switch {
	case c.ClamdDialTimeout < 0:
		return errors.New("scan: ClamdDialTimeout must not be negative")
	case c.MaxStreamBytes < 0:
		return errors.New("scan: MaxStreamBytes must not be negative")
	case c.MaxRatio < 0:
		return errors.New("scan: MaxRatio must not be negative")
	case c.RatioMinBytes < 0, c.MaxInspectBytes < 0, c.MaxEntryBytes < 0:
		return errors.New("scan: RatioMinBytes, MaxInspectBytes and MaxEntryBytes must not be negative")
	case c.MaxDepth < 0 || c.MaxEntries < 0:
		return errors.New("scan: MaxDepth and MaxEntries must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ClamdAddress == "" {
		c.ClamdAddress = d.ClamdAddress
	}
	if c.ClamdDialTimeout == 0 {
		c.ClamdDialTimeout = d.ClamdDialTimeout
	}
	if c.MaxStreamBytes == 0 {
		c.MaxStreamBytes = d.MaxStreamBytes
	}
	if c.MaxRatio == 0 {
		c.MaxRatio = d.MaxRatio
	}
	if c.RatioMinBytes == 0 {
		c.RatioMinBytes = d.RatioMinBytes
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = d.MaxDepth
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = d.MaxEntries
	}
	if c.MaxInspectBytes == 0 {
		c.MaxInspectBytes = d.MaxInspectBytes
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = d.MaxEntryBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Engine is the scan engine: clamd plus the built-in rules. It is safe for concurrent
// use. Its Scan method is also what upload completion calls for validation.scan.
type Engine struct {
	cfg   Config
	clamd *clamd

	mu      sync.Mutex
	version string // clamd's VERSION answer, from the last Check
	// noFildes is set once clamd refused a descriptor: it is streamed to from then on.
	noFildes atomic.Bool
}

var _ domain.Engine = (*Engine)(nil)

// New returns a scan engine; it does not contact clamd (Check does).
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Daemon != nil {
		cfg.ClamdAddress = cfg.Daemon.Address()
	}
	network, addr, err := parseClamdAddress(cfg.ClamdAddress)
	if err != nil {
		return nil, fmt.Errorf("scan: ClamdAddress: %v", err)
	}
	return &Engine{cfg: cfg, clamd: &clamd{network: network, addr: addr, dialTimeout: cfg.ClamdDialTimeout}}, nil
}

// Specs declares the operation this engine serves.
func Specs() []domain.OperationSpec {
	return []domain.OperationSpec{{
		Name:   OperationScan,
		Engine: EngineName,
		Description: "Scans for malware with ClamAV and built-in rules (EICAR; PDF JavaScript, automatic actions, " +
			"Launch and embedded files; Office macros; executables inside archives or under another extension; " +
			"archive bombs; name, declared type and content that disagree). A malicious verdict fails the job " +
			"with malware_detected and its findings; otherwise scan.json reports the verdict (clean or suspicious).",
		InputFormats: []string{"*"},
		Price:        domain.Price{Credits: 1, Per: "file"},
	}}
}

// Check is nil when clamd answers PING and VERSION at ClamdAddress: without it the
// scan operation is unavailable, never a silent pass.
func (e *Engine) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if e.cfg.Daemon != nil {
		if err := e.cfg.Daemon.Ready(ctx); err != nil {
			return err
		}
	}
	if err := e.clamd.ping(ctx); err != nil {
		return fmt.Errorf("scan: clamd at %s: %w", e.cfg.ClamdAddress, err)
	}
	v, err := e.clamd.version(ctx)
	if err != nil {
		return fmt.Errorf("scan: clamd at %s: %w", e.cfg.ClamdAddress, err)
	}
	e.mu.Lock()
	e.version = v
	e.mu.Unlock()
	return nil
}

// Version names ClamAV (with its signature database, as of the last Check) and the
// built-in rules.
func (e *Engine) Version() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := e.version
	if v == "" {
		v = "ClamAV (not yet reached)"
	}
	return v + "; rules " + RulesVersion
}

// Close releases nothing: each scan has its own connection.
func (e *Engine) Close() error { return nil }

// Scan scans the file at path, named filename by its uploader who declared it
// declaredMIME (either may be empty). Both layers run at once: clamd (by descriptor
// or INSTREAM) and the built-in rules. Findings are sorted most severe first.
//
// Archives nested deeper than clamd follows (its MaxRecursion) are a finding, as the
// rules' own nesting limit is: the file is a bomb by its nesting.
//
// Errors: unsupported_input (past another limit of clamd's: larger than it accepts,
// more files, longer to scan), dependency_unavailable (clamd not reachable: the file is
// not passed unscanned); ctx's error when it ends.
func (e *Engine) Scan(ctx context.Context, path, filename, declaredMIME string) (Verdict, []Finding, error) {
	r, err := e.scan(ctx, path, filename, declaredMIME)
	if err != nil {
		return "", nil, err
	}
	return r.Verdict, r.Findings, nil
}

func (e *Engine) scan(ctx context.Context, path, filename, declaredMIME string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scan: open input: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("scan: stat input: %w", err)
	}
	if st.Size() > e.cfg.MaxStreamBytes {
		return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(
			"the file is %d bytes; the virus scanner takes at most %d", st.Size(), e.cfg.MaxStreamBytes)}
	}

	type clamResult struct {
		found []string
		err   error
	}
	clamCh := make(chan clamResult, 1)
	go func() {
		// A separate descriptor: the rules read the file at the same time.
		cf, err := os.Open(path)
		if err != nil {
			clamCh <- clamResult{err: err}
			return
		}
		defer cf.Close()
		found, err := e.clamdScan(ctx, cf)
		clamCh <- clamResult{found, err}
	}()

	ins := newInspector(ctx, e.cfg)
	ruleErr := ins.inspectFile(f, st.Size(), filename, declaredMIME)
	cr := <-clamCh
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var limit *limitError
	tooDeep := errors.As(cr.err, &limit) && limit.limit == "MaxRecursion"
	if cr.err != nil && !tooDeep {
		e.cfg.Logger.Warn("scan: clamd failed", "file", filename, "error", cr.err.Error())
		switch {
		case errors.Is(cr.err, errStreamTooLong):
			return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: "the file is larger than the virus scanner accepts: it could not be scanned completely"}
		case limit != nil:
			return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: limitMessage(limit.limit)}
		}
		return nil, &domain.Error{Code: domain.CodeDependencyUnavailable, Message: "the virus scanner is not reachable; the file was not scanned"}
	}
	if ruleErr != nil {
		return nil, ruleErr
	}
	if tooDeep && !slices.ContainsFunc(ins.findings, func(f Finding) bool { return f.Rule == ruleNesting }) {
		ins.add(ruleNesting, SeverityHigh, fmt.Sprintf("the file %q nests archives deeper than the virus scanner follows "+
			"(ClamAV's recursion limit, MaxRecursion): the innermost files could not be scanned", filename))
	}
	for _, sig := range cr.found {
		ins.add("clamav", SeverityHigh, "ClamAV signature "+sig+" matched")
	}
	findings := ins.findings
	sort.SliceStable(findings, func(i, j int) bool { return rank(findings[i].Severity) > rank(findings[j].Severity) })
	if findings == nil {
		findings = []Finding{}
	}
	e.mu.Lock()
	clamVersion := e.version
	e.mu.Unlock()
	return &Report{Verdict: verdictOf(findings), Findings: findings, ScannedBytes: st.Size(),
		Engines: map[string]string{"clamav": clamVersion, "rules": RulesVersion}}, nil
}

// limitMessage says which of clamd's limits (other than MaxRecursion) a file went past.
func limitMessage(limit string) string {
	const incomplete = ": it could not be scanned completely"
	switch limit {
	case "MaxFileSize", "MaxScanSize":
		return "the file is larger than the virus scanner accepts (ClamAV's " + limit + ")" + incomplete
	case "MaxFiles":
		return "the file holds more files than the virus scanner scans (ClamAV's MaxFiles)" + incomplete
	case "MaxScanTime":
		return "scanning the file took longer than the virus scanner allows (ClamAV's MaxScanTime)" + incomplete
	}
	return "the file went past the virus scanner's limit " + limit + incomplete
}

// clamdScan has clamd scan f: by descriptor over a unix socket, else as a stream.
func (e *Engine) clamdScan(ctx context.Context, f *os.File) ([]string, error) {
	if e.cfg.Daemon != nil {
		if err := e.cfg.Daemon.Ready(ctx); err != nil {
			return nil, fmt.Errorf("%w: %v", errClamdUnreachable, err)
		}
	}
	if e.clamd.network == "unix" && !e.cfg.ClamdInstream && !e.noFildes.Load() {
		found, err := e.clamd.fildes(ctx, f)
		if err == nil || ctx.Err() != nil || errors.Is(err, errClamdUnreachable) || errors.As(err, new(*limitError)) {
			return found, err
		}
		// A clamd that does not take descriptors answers with an error: stream instead.
		e.cfg.Logger.Warn("scan: clamd refused a file descriptor; streaming from now on", "error", err.Error())
		e.noFildes.Store(true)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return e.clamd.instream(ctx, f)
}

func rank(sev string) int {
	switch sev {
	case SeverityHigh:
		return 3
	case SeverityMedium:
		return 2
	}
	return 1
}

func verdictOf(fs []Finding) Verdict {
	v := Clean
	for _, f := range fs {
		switch f.Severity {
		case SeverityHigh:
			return Malicious
		case SeverityMedium:
			v = Suspicious
		}
	}
	return v
}

// Run scans in.Path. A malicious verdict fails with malware_detected, its details
// carrying the verdict and findings; otherwise scan.json is the artifact.
//
// Errors: malware_detected; those of Scan.
func (e *Engine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Operation != "" && in.Operation != OperationScan {
		return nil, &domain.Error{Code: domain.CodeUnsupportedOperation, Message: "the scan engine does not run " + in.Operation}
	}
	r, err := e.scan(ctx, in.Path, in.Filename, "")
	if err != nil {
		return nil, err
	}
	if r.Verdict == Malicious {
		return nil, MalwareError(r.Findings)
	}
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("scan: encode report: %w", err)
	}
	path := filepath.Join(in.WorkDir, ArtifactName)
	if err := os.WriteFile(path, append(out, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("scan: write report: %w", err)
	}
	return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{{Name: ArtifactName, MIMEType: ArtifactMIMEType, Path: path}}}, nil
}

// MalwareError is the malware_detected error for a malicious verdict, with the
// findings in its details (as upload completion should answer too).
func MalwareError(findings []Finding) *domain.Error {
	msg := "malware detected"
	for _, f := range findings {
		if f.Severity == SeverityHigh {
			msg += ": " + f.Message
			break
		}
	}
	return &domain.Error{Code: domain.CodeMalwareDetected, Message: msg,
		Details: map[string]any{"verdict": string(Malicious), "findings": findings}}
}

// ScanUpload scans a completed upload for the platform (validation.scan): a malicious
// verdict rejects the file with every finding that is more than a note. It implements
// domain.UploadScanner.
func (e *Engine) ScanUpload(ctx context.Context, path, filename, declaredMIME string) (bool, []domain.Finding, error) {
	verdict, findings, err := e.Scan(ctx, path, filename, declaredMIME)
	if err != nil || verdict != Malicious {
		return false, nil, err
	}
	var out []domain.Finding
	for _, f := range findings {
		if f.Severity == SeverityLow {
			continue
		}
		out = append(out, domain.Finding{Code: domain.CodeMalwareDetected, Rule: f.Rule, Severity: f.Severity, Message: f.Message})
	}
	return true, out, nil
}

var _ domain.UploadScanner = (*Engine)(nil)
