package image_test

import (
	"encoding/base64"
	"fmt"
	"image/color"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// An SVG can name other files and URLs for its images. None is read: not a file by
// absolute path or file: URL, not one outside the input's directory by a relative
// path, not a URL over the network. Each would paint its square of the output green;
// the same image inlined as a data: URL shows that images are drawn at all.
func TestSVGReferencesReachNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	green := encPNG(t, solid(50, 50, color.NRGBA{0, 255, 0, 255}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write(green)
	}))
	defer srv.Close()
	// convertWith writes the input into a fresh temporary directory; this one is its
	// sibling, so "../NAME/green.png" leads here from the input.
	elsewhere := t.TempDir()
	path := filepath.Join(elsewhere, "green.png")
	require.NoError(t, os.WriteFile(path, green, 0o600))
	svg := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="300" height="200">`+
		`<rect width="300" height="200" fill="#fff"/>`+
		`<image x="0" y="0" width="100" height="100" href="file://%s"/>`+
		`<image x="100" y="0" width="100" height="100" xlink:href="%s"/>`+
		`<image x="0" y="100" width="100" height="100" href="../%s/green.png"/>`+
		`<image x="100" y="100" width="100" height="100" href="%s/g.png"/>`+
		`<image x="200" y="0" width="100" height="100" href="data:image/png;base64,%s"/></svg>`,
		path, path, filepath.Base(elsewhere), srv.URL, base64.StdEncoding.EncodeToString(green))
	im := decode(t, convert(t, "refs.svg", []byte(svg), map[string]any{"format": "png"}).data)
	for _, p := range [][2]int{{50, 50}, {150, 50}, {50, 150}, {150, 150}} {
		require.Equal(t, [3]int{255, 255, 255}, rgbAt(im, p[0], p[1]), "nothing painted at %v", p)
	}
	require.Equal(t, [3]int{0, 255, 0}, rgbAt(im, 250, 50), "the inlined image is drawn")
	require.Zero(t, hits.Load(), "no request was made")

	// An external entity is not read either: the document does not parse.
	secret := filepath.Join(elsewhere, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("entity-secret"), 0o600))
	ent := fmt.Sprintf(`<!DOCTYPE svg [<!ENTITY x SYSTEM "file://%s">]>`+
		`<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="5" y="30">&x;</text></svg>`, secret)
	_, err := convertWith(t, engine(t), "entity.svg", []byte(ent), map[string]any{"format": "png"})
	requireCode(t, err, domain.CodeCorruptedFile)
	require.NotContains(t, err.Error(), "entity-secret")
}
