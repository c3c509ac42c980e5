package vips

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// bigJPEG writes a 6000×6000 JPEG: decoding it is many of libvips' tiles.
func bigJPEG(t *testing.T) string {
	t.Helper()
	im := image.NewGray(image.Rect(0, 0, 6000, 6000))
	for y := 0; y < 6000; y++ {
		for x := 0; x < 6000; x += 97 {
			im.SetGray(x, y, color.Gray{Y: uint8(x ^ y)})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, im, &jpeg.Options{Quality: 60}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.jpg")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A decode or an encode whose context has ended stops at libvips' next tile and
// returns the context's error; with a live context the same calls complete.
func TestCallsStopWhenTheirContextEnds(t *testing.T) {
	path := bigJPEG(t)
	up, err := LoadUpright(context.Background(), path, LoadJPEG)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if up.Width != 6000 || up.Height != 6000 {
		t.Fatalf("decoded %d×%d", up.Width, up.Height)
	}

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LoadUpright(ended, path, LoadJPEG); !errors.Is(err, context.Canceled) {
		t.Fatalf("decode with an ended context: %v, want context.Canceled", err)
	}
	out := filepath.Join(t.TempDir(), "out.png")
	if err := EncodeFile(ended, out, up.Pixels, PNG, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("encode with an ended context: %v, want context.Canceled", err)
	}
	if err := EncodeFile(context.Background(), out, up.Pixels, PNG, 0); err != nil {
		t.Fatalf("encode: %v", err)
	}
}
