package office

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/filemill/filemill/jobs/ops/internal/fsutil"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// Sandbox modes (Config.Sandbox).
const (
	SandboxAuto = "auto" // confine when bubblewrap works on this host, warn otherwise
	SandboxOn   = "on"   // confine, or convert nothing
	SandboxOff  = "off"  // never confine
)

// CheckSandboxMode reports whether mode is one of the sandbox modes.
func CheckSandboxMode(mode string) error {
	switch mode {
	case SandboxAuto, SandboxOn, SandboxOff:
		return nil
	}
	return fmt.Errorf("%q is not one of %s, %s, %s", mode, SandboxAuto, SandboxOn, SandboxOff)
}

// A document can make LibreOffice read files: an ODP's image linked by file: URL is
// embedded on import, and no setting stops it. So each instance runs under bubblewrap
// and sees only the system's programs, libraries and fonts, its own profile and /tmp,
// and its own exchange directory, where the worker puts the one document being converted and
// takes the result back. Storage, other jobs' scratch space, other processes (a fresh
// PID namespace and /proc) and the network are not there to be read.
const (
	boxRoot     = "/office"
	boxProfile  = boxRoot + "/profile"
	boxExchange = boxRoot + "/exchange"
	boxHelper   = boxRoot + "/helper.py"
)

// boxEtc are the parts of /etc an instance reads: the dynamic linker's cache, fonts,
// LibreOffice's own settings and the alternatives its programs are reached through.
var boxEtc = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/fonts",
	"/etc/libreoffice", "/etc/alternatives", "/etc/localtime", "/etc/mime.types",
}

// boxSystem are the top-level directories that hold programs and libraries; on a
// merged-/usr system all but /usr are links into it.
var boxSystem = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// sandbox builds bubblewrap command lines; the zero value (no bwrap) confines nothing.
type sandbox struct {
	bwrap string
	extra []string // read-only binds for programs installed outside /usr
}

// on reports whether instances are confined.
func (s sandbox) on() bool { return s.bwrap != "" }

// newSandbox resolves the mode: it probes bubblewrap once unless the mode is off.
func newSandbox(cfg Config) (sandbox, error) {
	if cfg.Sandbox == SandboxOff {
		return sandbox{}, nil
	}
	s, err := probeSandbox(cfg)
	if err == nil {
		return s, nil
	}
	if cfg.Sandbox == SandboxOn {
		return sandbox{}, fmt.Errorf("office: the LibreOffice sandbox is required (FILEMILL_OFFICE_SANDBOX=on) and cannot start: %w", err)
	}
	slog.Warn("office: LibreOffice runs unconfined: documents can read files this worker can read; install bubblewrap (apt-get install bubblewrap) and allow it namespaces, or set FILEMILL_OFFICE_SANDBOX=off to silence this",
		"error", err.Error())
	return sandbox{}, nil
}

func probeSandbox(cfg Config) (sandbox, error) {
	bwrap, err := exec.LookPath(cfg.Bwrap)
	if err != nil {
		return sandbox{}, fmt.Errorf("%s: %w", cfg.Bwrap, err)
	}
	s := sandbox{bwrap: bwrap}
	// Programs configured outside the system directories are bound where they are.
	for _, prog := range []string{cfg.Soffice, cfg.Python} {
		p, err := exec.LookPath(prog)
		if err != nil {
			return sandbox{}, err
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if !underSystem(p) {
			// soffice lives in <install>/program/: the whole installation is needed.
			s.extra = append(s.extra, filepath.Dir(filepath.Dir(p)))
		}
	}
	dir, err := os.MkdirTemp("", "filemill-office-probe-")
	if err != nil {
		return sandbox{}, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path, args := s.wrap(boxDirs{profile: dir, exchange: dir, tmp: dir, helper: dir}, "/usr/bin/env", []string{"true"})
	if err := runner.Run(ctx, runner.Cmd{Path: path, Args: args}); err != nil {
		return sandbox{}, err
	}
	return s, nil
}

func underSystem(p string) bool {
	for _, d := range boxSystem {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// boxDirs are an instance's own directories on the host, bound into its sandbox.
type boxDirs struct {
	profile  string // its LibreOffice profile, at boxProfile
	exchange string // the document it converts and the result, at boxExchange
	tmp      string // its /tmp: on disk, as the host's is, not in memory
	helper   string // the helper script, read-only at boxHelper
}

// wrap returns the command that runs program with args inside the sandbox.
func (s sandbox) wrap(d boxDirs, program string, args []string) (string, []string) {
	a := []string{
		"--unshare-all", "--die-with-parent",
		"--proc", "/proc", "--dev", "/dev", "--bind", d.tmp, "/tmp",
		"--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
	}
	for _, d := range boxSystem {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, p := range boxEtc {
		a = append(a, "--ro-bind-try", p, p)
	}
	// fontconfig's cache: without it every start scans the fonts again.
	a = append(a, "--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig")
	for _, p := range s.extra {
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a,
		"--bind", d.profile, boxProfile,
		"--bind", d.exchange, boxExchange,
		"--ro-bind", d.helper, boxHelper,
		"--chdir", boxExchange,
		"--", program)
	return s.bwrap, append(a, args...)
}

// stage puts the request's input in the instance's exchange directory and returns the
// request as the sandbox sees it.
func stage(exchange string, req request) (request, error) {
	in := filepath.Join(exchange, "in-"+filepath.Base(req.In))
	if err := os.Link(req.In, in); err != nil {
		if err := fsutil.CopyFile(req.In, in); err != nil {
			return req, fmt.Errorf("office: stage input: %w", err)
		}
	}
	box := req
	box.In = boxExchange + "/" + filepath.Base(in)
	box.Out = boxExchange + "/out-" + filepath.Base(req.Out)
	return box, nil
}

// collect moves the sandbox's output to where the request wants it.
func collect(exchange string, req request) error {
	out := filepath.Join(exchange, "out-"+filepath.Base(req.Out))
	if err := os.Rename(out, req.Out); err == nil {
		return nil
	} else if !errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("office: collect output: %w", err)
	}
	if err := fsutil.CopyFile(out, req.Out); err != nil {
		return fmt.Errorf("office: collect output: %w", err)
	}
	return nil
}

// clearDir empties a directory bound into a sandbox; the directory itself stays, since
// the sandbox has it mounted.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// emptyDir creates dir, or empties it if it is there.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return clearDir(dir)
}
