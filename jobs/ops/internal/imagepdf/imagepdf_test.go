package imagepdf_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/jobs/ops/internal/imagepdf"
	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
)

// quadrants is an upright test picture whose four quadrants differ: any turn or mirror
// shows.
func quadrants(w, h int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8(0)
			if x >= w/2 {
				v += 80
			}
			if y >= h/2 {
				v += 160
			}
			img.Pix[y*img.Stride+x] = v
		}
	}
	return img
}

func tool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is missing: apt-get install -y --no-install-recommends %s", name, pkg)
	}
}

// Every EXIF orientation gives an upright page of the displayed size, with the JPEG's
// bytes embedded as they are.
func TestJPEGPageIsUprightForEveryOrientation(t *testing.T) {
	t.Parallel()
	tool(t, "pdftoppm", "poppler-utils")
	tool(t, "qpdf", "qpdf")
	tool(t, "vips", "libvips-tools")
	const w, h = 160, 100
	want := quadrants(w, h)
	dir := t.TempDir()
	for o := 1; o <= 8; o++ {
		t.Run(fmt.Sprintf("Orientation%d", o), func(t *testing.T) {
			data := ocrtest.OrientedJPEG(t, want, o)
			// The fixture is what libvips (image.convert's autorot) shows upright.
			stored := filepath.Join(dir, fmt.Sprintf("o%d.jpg", o))
			require.NoError(t, os.WriteFile(stored, data, 0o600))
			shown := filepath.Join(dir, fmt.Sprintf("o%d-vips.png", o))
			msg, err := exec.Command("vips", "autorot", stored, shown).CombinedOutput()
			require.NoError(t, err, "%s", msg)
			requireQuadrants(t, want, shown)

			img, err := imagepdf.JPEG(data)
			require.NoError(t, err)
			sw, sh := imagepdf.Upright(img.Width, img.Height, o)
			require.Equal(t, []int{w, h}, []int{sw, sh}, "the stored image turned back is the upright one")

			pc, err := imagepdf.New()
			require.NoError(t, err)
			pw, ph, err := imagepdf.AddPage(pc, img, o, 72)
			require.NoError(t, err)
			require.Equal(t, []float64{w, h}, []float64{pw, ph})
			out := filepath.Join(dir, fmt.Sprintf("o%d.pdf", o))
			require.NoError(t, imagepdf.Write(pc, out))
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, bytes.Contains(b, data), "the JPEG is embedded byte for byte")
			chk, err := exec.Command("qpdf", "--check", out).CombinedOutput()
			require.NoError(t, err, "%s", chk)

			base := strings.TrimSuffix(out, ".pdf")
			msg, err = exec.Command("pdftoppm", "-gray", "-r", "72", "-singlefile", "-png", out, base).CombinedOutput()
			require.NoError(t, err, "%s", msg)
			requireQuadrants(t, want, base+".png")
		})
	}
}

// requireQuadrants checks that the PNG at path shows want's quadrants, the same size.
func requireQuadrants(t *testing.T, want *image.Gray, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := png.Decode(f)
	require.NoError(t, err)
	w, h := want.Bounds().Dx(), want.Bounds().Dy()
	require.Equal(t, image.Rect(0, 0, w, h), got.Bounds(), "the displayed size")
	for _, p := range []image.Point{{w / 4, h / 4}, {3 * w / 4, h / 4}, {w / 4, 3 * h / 4}, {3 * w / 4, 3 * h / 4}} {
		g, _, _, _ := got.At(p.X, p.Y).RGBA()
		require.InDelta(t, int(want.GrayAt(p.X, p.Y).Y), int(g>>8), 12, "quadrant at %v", p)
	}
}

func TestFlateKeepsPixels(t *testing.T) {
	t.Parallel()
	img, err := imagepdf.Flate([]byte{1, 2, 3, 4, 5, 6}, 2, 1, 3)
	require.NoError(t, err)
	require.Equal(t, "DeviceRGB", img.ColorSpace)
	_, err = imagepdf.Flate([]byte{1, 2}, 2, 1, 3)
	require.Error(t, err, "too few samples")
}

func TestMatrixOfOrientation1IsAScale(t *testing.T) {
	require.Equal(t, [6]float64{612, 0, 0, 792, 0, 0}, imagepdf.Matrix(1, 612, 792))
	require.Equal(t, "0.3333 -2 100", imagepdf.Numbers(1.0/3, -2, 100))
}
