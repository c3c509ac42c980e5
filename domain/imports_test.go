package domain

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDomainDoesNoSystemIO keeps the domain's rules apart from the machine: the file
// system (a worker's scratch directory is jobs/'s), system calls and database drivers
// are the business of the packages that speak to them, which hand the domain its
// codes. It reads what `go list` says every package under domain/ imports (tests
// aside).
func TestDomainDoesNoSystemIO(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"os", "path/filepath", "syscall", "database/sql", "database/sql/driver", "io/ioutil"}
	drivers := []string{"os/", "golang.org/x/sys/", "github.com/jackc/", "github.com/lib/pq", "github.com/uptrace/bun",
		"github.com/mattn/go-sqlite3", "modernc.org/sqlite", "github.com/go-sql-driver/", "github.com/redis/",
		"github.com/minio/", "github.com/hibiken/asynq"}
	// netguard names syscall.RawConn, the type of net.Dialer's Control hook it plugs
	// into; it makes no system call of its own.
	allowed := map[string][]string{"github.com/filemill/filemill/domain/netguard": {"syscall"}}
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		packages++
		for _, imp := range imports {
			if slices.Contains(allowed[pkg], imp) {
				continue
			}
			if slices.Contains(forbidden, imp) || slices.ContainsFunc(drivers, func(p string) bool { return strings.HasPrefix(imp, p) }) {
				t.Errorf("%s imports %s: file-system, system-call and driver work belongs outside the domain", pkg, imp)
			}
		}
	}
	if packages < 2 {
		t.Fatalf("go list named %d packages: the test reads the wrong directory", packages)
	}
}
