package catalog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/catalog"
)

// TestCatalog: every operation and preset of the contract is declared, and every
// preset's steps and fixed options pass the registry's checks.
func TestCatalog(t *testing.T) {
	t.Parallel()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	for _, name := range []string{"inspect", "convert", "ocr", "pdf.merge", "pdf.pages", "pdf.split", "pdf.compress", "pdf.render", "image.convert", "scan"} {
		op := reg.Operation(name)
		require.NotNil(t, op, name)
		require.False(t, op.Hidden, name)
	}
	for _, name := range []string{"document", "image", "avatar", "inspect", "ai-ready"} {
		require.NotNil(t, reg.Preset(name), name)
	}
}

// Image and render work has a deadline of its own, 2 minutes, shorter than the job
// timeout; FILEMILL_OPERATION_TIMEOUTS (Config.OperationTimeouts) still overrides it.
func TestImageAndRenderDeadlines(t *testing.T) {
	t.Parallel()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	cfg := domain.DefaultConfig()
	for _, name := range []string{"image.convert", "pdf.render"} {
		require.Equal(t, 2*time.Minute, cfg.OperationTimeout(reg.Operation(name)), name)
	}
	require.Greater(t, cfg.OperationTimeout(reg.Operation("convert")), 2*time.Minute, "office work keeps the job timeout")
	cfg.OperationTimeouts = map[string]time.Duration{"image.convert": 30 * time.Second}
	require.Equal(t, 30*time.Second, cfg.OperationTimeout(reg.Operation("image.convert")))
	require.Equal(t, 2*time.Minute, cfg.OperationTimeout(reg.Operation("pdf.render")))
}
