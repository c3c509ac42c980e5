package rest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// TestDamagedInputFailsInPlainWords runs inspect on a PDF whose page tree lacks its
// Count: the job fails with corrupted_file and a sentence for a person, not the
// parser's own words.
func TestDamagedInputFailsInPlainWords(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: true})
	broken := strings.Replace(minimalPDF, "/Count 1", "", 1)
	id := b.readyFile(b.liveA, "broken.pdf", []byte(broken))
	r := b.createJob(b.liveA, map[string]any{"file_id": id, "operation": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	e := j["error"].(map[string]any)
	require.Equal(t, domain.CodeCorruptedFile, e["code"])
	msg := e["message"].(string)
	require.Equal(t, "the PDF is damaged or incomplete: its structure cannot be read", msg)
	for _, internal := range []string{"pageDict", "Count", "page tree", "pdfcpu"} {
		require.NotContains(t, msg, internal)
	}
}
