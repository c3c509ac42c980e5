package domain

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestDomainDoesNoSystemIO keeps the domain's rules apart from the machine: the file
// system (a worker's scratch directory is jobs/'s), system calls and database drivers
// are the business of the packages that speak to them, which hand the domain its
// codes.
func TestDomainDoesNoSystemIO(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports read: the test reads the wrong directory")
	}
	forbidden := []string{"os", "path/filepath", "syscall", "database/sql", "database/sql/driver", "io/ioutil"}
	drivers := []string{"os/", "golang.org/x/sys/", "github.com/jackc/", "github.com/lib/pq", "github.com/uptrace/bun",
		"github.com/mattn/go-sqlite3", "modernc.org/sqlite", "github.com/go-sql-driver/", "github.com/redis/",
		"github.com/minio/"}
	for _, imp := range pkg.Imports {
		if slices.Contains(forbidden, imp) || slices.ContainsFunc(drivers, func(p string) bool { return strings.HasPrefix(imp, p) }) {
			t.Errorf("domain imports %s: file-system, system-call and driver work belongs outside the domain", imp)
		}
	}
}
