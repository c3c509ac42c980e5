package ocrtest

/*
#cgo pkg-config: vips
#include <stdlib.h>
#include <vips/vips.h>

// oriented_jpeg stores an upright gray image the way a camera held at an angle does:
// the pixels turned or mirrored by the inverse of orientation, and the EXIF tag set so
// that a viewer applying it shows the image upright again.
static int oriented_jpeg(const unsigned char *pix, int w, int h, int orientation, void **out, size_t *len) {
	if (VIPS_INIT("ocrtest")) return -1;
	VipsImage *im = vips_image_new_from_memory_copy(pix, (size_t)w * h, w, h, 1, VIPS_FORMAT_UCHAR), *t = NULL, *u = NULL;
	if (!im) return -1;
	im->Type = VIPS_INTERPRETATION_B_W;
	int r = 0;
	switch (orientation) {
	case 2: r = vips_flip(im, &t, VIPS_DIRECTION_HORIZONTAL, NULL); break;
	case 3: r = vips_rot(im, &t, VIPS_ANGLE_D180, NULL); break;
	case 4: r = vips_flip(im, &t, VIPS_DIRECTION_VERTICAL, NULL); break;
	case 5: // transpose: a quarter turn clockwise, then mirrored
		if (!(r = vips_rot(im, &u, VIPS_ANGLE_D90, NULL))) { r = vips_flip(u, &t, VIPS_DIRECTION_HORIZONTAL, NULL); g_object_unref(u); }
		break;
	case 6: r = vips_rot(im, &t, VIPS_ANGLE_D270, NULL); break; // shown turned a quarter clockwise
	case 7: // transverse: a quarter turn anticlockwise, then mirrored
		if (!(r = vips_rot(im, &u, VIPS_ANGLE_D270, NULL))) { r = vips_flip(u, &t, VIPS_DIRECTION_HORIZONTAL, NULL); g_object_unref(u); }
		break;
	case 8: r = vips_rot(im, &t, VIPS_ANGLE_D90, NULL); break; // shown turned a quarter anticlockwise
	default: t = im; g_object_ref(t);
	}
	g_object_unref(im);
	if (r) return -1;
	VipsImage *c = NULL;
	if (vips_copy(t, &c, NULL)) { g_object_unref(t); return -1; }
	g_object_unref(t);
	vips_image_set_int(c, VIPS_META_ORIENTATION, orientation);
	r = vips_jpegsave_buffer(c, out, len, "Q", 90, NULL);
	g_object_unref(c);
	return r;
}
*/
import "C"

import (
	"image"
	"testing"
	"unsafe"
)

// OrientedJPEG returns img as a camera held at an angle stores it: a JPEG whose pixels
// are turned or mirrored and whose EXIF orientation (1–8) tells viewers how to show
// them so that img appears upright. It is made with libvips.
func OrientedJPEG(tb testing.TB, img *image.Gray, orientation int) []byte {
	tb.Helper()
	b := img.Bounds()
	pix := make([]byte, 0, b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		pix = append(pix, img.Pix[img.PixOffset(b.Min.X, y):img.PixOffset(b.Max.X, y)]...)
	}
	var out unsafe.Pointer
	var n C.size_t
	if C.oriented_jpeg((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(b.Dx()), C.int(b.Dy()), C.int(orientation), &out, &n) != 0 {
		tb.Fatalf("libvips: %s", C.GoString(C.vips_error_buffer()))
	}
	defer C.g_free(C.gpointer(out))
	return C.GoBytes(out, C.int(n))
}
