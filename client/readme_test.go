package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeGoCode builds the Go program of the README's "Use it from Go/TypeScript"
// section (as a package of this module, through a build overlay: nothing is written
// into the tree) and runs it against the package's deployment.
func TestReadmeGoCode(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(raw)
	i := strings.Index(readme, "## Use it from Go/TypeScript")
	require.GreaterOrEqual(t, i, 0, "the README has the section")
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(readme[i:])
	require.NotNil(t, m, "the section has a Go block")

	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(src, []byte(m[1]), 0o600))
	pkg, err := filepath.Abs("internal/readme")
	require.NoError(t, err)
	overlay := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlay, []byte(`{"Replace":{"`+filepath.Join(pkg, "main.go")+`":"`+src+`"}}`), 0o600))
	bin := filepath.Join(dir, "readme")
	out, err := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "./internal/readme").CombinedOutput()
	require.NoError(t, err, "%s", out)

	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "report.pdf"), []byte(minimalPDF), 0o600))
	run := exec.Command(bin)
	run.Dir = work
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^succeeded \d+ artifacts$`, string(out))
	_, err = os.Stat(filepath.Join(work, "report.pdf.upload.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "the completed upload forgot its state")
}

// minimalPDF is a one-page PDF small enough to write inline.
const minimalPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
