package office

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// LibreOffice gets what it needs to run and none of the worker's settings.
func TestOfficeEnvKeepsTheWorkersSettingsOut(t *testing.T) {
	t.Setenv("FILEMILL_DATABASE_URL", "postgres://filemill:secret@db/filemill")
	t.Setenv("FILEMILL_STORAGE_SECRET", "00112233")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("https_proxy", "http://proxy:3128")
	t.Setenv("DISPLAY", ":0")
	t.Setenv("LC_ALL", "C.UTF-8")
	env := officeEnv()
	for _, kv := range env {
		require.NotContains(t, kv, "secret", "%s reaches LibreOffice", kv)
		for _, k := range []string{"FILEMILL_", "AWS_", "https_proxy=", "DISPLAY="} {
			require.False(t, strings.HasPrefix(kv, k), "%s reaches LibreOffice", kv)
		}
	}
	require.Contains(t, env, "LC_ALL=C.UTF-8")
	require.Contains(t, env, "SAL_USE_VCLPLUGIN=svp")
	require.True(t, slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }), "PATH is kept: %v", env)
}
