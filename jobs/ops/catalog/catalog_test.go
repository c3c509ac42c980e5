package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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
