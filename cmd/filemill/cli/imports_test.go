package cli_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsOnlyTheSDK keeps the client a user of the API like any other: of this
// module it imports the SDK (client, client/api, client/webhook) and nothing of the
// server (domain, rest, graph, db, storage, jobs).
func TestImportsOnlyTheSDK(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/filemill/filemill/") {
			require.True(t, strings.HasPrefix(pkg, "github.com/filemill/filemill/client") ||
				pkg == "github.com/filemill/filemill/cmd/filemill/cli", "the CLI imports %s", pkg)
		}
	}
}
