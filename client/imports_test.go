package client_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNoServerPackage keeps the SDK apart from the server: its packages import
// their own generated code and outside libraries, never domain, rest, graph, db,
// storage, jobs or cmd.
func TestImportsNoServerPackage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/filemill/filemill/") {
			require.True(t, strings.HasPrefix(pkg, "github.com/filemill/filemill/client"), "the SDK imports %s", pkg)
		}
	}
}
