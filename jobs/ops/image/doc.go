// Package image is the image engine: image.convert on libvips, called in-process
// through the one libvips binding the engines share (jobs/ops/internal/vips), with
// this package's cgo wrappers over the few calls it needs.
//
// A conversion reads the input's header first and refuses it, before any pixel is
// decoded, when it exceeds the pixel, frame or output limits. It then decodes through
// libvips' thumbnail operation at the exact size it computed for the fit mode, which
// loads JPEG with DCT scaling and WebP, SVG and PDF at size (shrink-on-load), applies
// the EXIF orientation and converts colour to sRGB; rotates, crops (compass or smart)
// and pads each frame; sets the metadata; encodes into the work directory; and reads
// the output back completely to verify it. Only the JPEG, PNG, WebP, HEIF/AVIF, GIF,
// TIFF, SVG and PDF loaders of libvips are reachable (never ImageMagick); BMP is
// decoded in Go.
//
// It imports domain types, jobs/ops/internal/vips and golang.org/x/image only; never
// HTTP, queue or database packages, nor other filemill engines.
package image
