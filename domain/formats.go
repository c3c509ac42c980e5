package domain

import (
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// detectableTypes are the media types Detect can name: those of the detector library
// (gabriel-vasile/mimetype v1.4.16, its supported_mimes.md). A validation.formats entry
// must name one of them, by type, alias, extension or family, or it could never match.
var detectableTypes = []string{
	"application/octet-stream", "image/x-xpixmap", "application/x-7z-compressed",
	"application/zip", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/epub+zip",
	"application/vnd.android.package-archive", "application/java-archive",
	"application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.text-template",
	"application/vnd.oasis.opendocument.spreadsheet",
	"application/vnd.oasis.opendocument.spreadsheet-template",
	"application/vnd.oasis.opendocument.presentation",
	"application/vnd.oasis.opendocument.presentation-template",
	"application/vnd.oasis.opendocument.graphics",
	"application/vnd.oasis.opendocument.graphics-template",
	"application/vnd.oasis.opendocument.formula", "application/vnd.oasis.opendocument.chart",
	"application/vnd.sun.xml.calc", "application/vnd.google-earth.kmz",
	"application/vnd.ms-visio.drawing.main+xml", "application/pdf", "application/vnd.fdf",
	"application/x-ole-storage", "application/x-ms-installer", "application/vnd.ms-outlook",
	"application/vnd.ms-excel", "application/vnd.ms-publisher", "application/vnd.ms-powerpoint",
	"application/msword", "application/postscript", "image/vnd.adobe.photoshop",
	"application/pkcs7-signature", "application/ogg", "audio/ogg", "video/ogg", "image/png",
	"image/apng", "image/jpeg", "image/jxl", "image/jp2", "image/jpx", "image/jpm", "image/jxs",
	"image/gif", "image/webp", "application/vnd.microsoft.portable-executable",
	"application/x-elf", "application/x-object", "application/x-executable",
	"application/x-sharedlib", "application/x-coredump", "application/x-archive",
	"application/vnd.debian.binary-package", "application/x-tar", "application/x-xar",
	"application/x-bzip2", "application/fits", "image/tiff", "image/bmp",
	"application/vnd.lotus-1-2-3", "image/x-icon", "audio/flac", "audio/midi", "audio/ape",
	"audio/musepack", "audio/amr", "audio/wav", "audio/aiff", "audio/basic", "video/mpeg",
	"video/quicktime", "video/mp4", "image/avif", "video/3gpp", "video/3gpp2", "audio/mp4",
	"video/quicktime", "audio/x-m4a", "video/x-m4v", "image/heic", "image/heic-sequence",
	"image/heif", "image/heif-sequence", "video/mj2", "video/vnd.dvb.file", "video/webm",
	"video/x-msvideo", "video/x-flv", "video/matroska", "video/x-ms-asf", "audio/aac",
	"audio/x-unknown", "application/vnd.apple.mpegurl", "application/vnd.rn-realmedia-vbr",
	"application/gzip", "application/x-java-applet", "application/x-shockwave-flash",
	"application/x-chrome-extension", "font/ttf", "font/woff", "font/woff2", "font/otf",
	"font/collection", "application/vnd.ms-fontobject", "application/wasm", "application/vnd.shx",
	"application/vnd.shp", "application/x-dbf", "application/dicom", "application/vnd.rar",
	"image/vnd.djvu", "application/x-mobipocket-ebook", "application/x-ms-reader", "image/bpg",
	"application/cbor", "application/vnd.sqlite3", "image/vnd.dwg",
	"application/vnd.nintendo.snes.rom", "application/x-ms-shortcut", "application/x-mach-binary",
	"audio/qcelp", "image/x-icns", "image/vnd.radiance", "application/marc",
	"application/x-msaccess", "application/x-msaccess", "application/zstd",
	"application/vnd.ms-cab-compressed", "application/x-rpm", "application/x-xz",
	"application/lzip", "application/x-bittorrent", "application/x-cpio", "application/tzif",
	"image/x-xcf", "image/x-gimp-pat", "image/x-gimp-gbr", "model/gltf-binary",
	"application/x-installshield", "image/jxr", "application/vnd.apache.parquet",
	"application/onenote", "application/vnd.ms-htmlhelp", "application/vnd.wordperfect",
	"image/vnd.dxf", "application/grib", "application/zlib", "application/x-os2-inf",
	"application/x-os2-hlp", "application/vnd.framemaker", "application/bufr",
	"application/x-bytecode.python", "application/vnd.tcpdump.pcap", "audio/mpeg", "text/plain",
	"image/svg+xml", "text/html", "text/xml", "application/rss+xml", "application/atom+xml",
	"model/x3d+xml", "application/vnd.google-earth.kml+xml", "application/x-xliff+xml",
	"model/vnd.collada+xml", "application/gml+xml", "application/gpx+xml",
	"application/vnd.garmin.tcx+xml", "application/x-amf",
	"application/vnd.ms-package.3dmanufacturing-3dmodel+xml", "application/vnd.adobe.xfdf",
	"application/owl+xml", "application/xhtml+xml", "application/vnd.cyclonedx+xml", "text/x-php",
	"text/javascript", "text/x-lua", "text/x-perl", "text/x-python", "text/x-ruby",
	"application/json", "application/geo+json", "application/json", "model/gltf+json",
	"application/vnd.cyclonedx+json", "application/x-ndjson", "text/rtf", "application/x-subrip",
	"text/x-tcl", "text/csv", "text/tab-separated-values", "text/vcard", "text/calendar",
	"application/warc", "text/vtt", "text/x-shellscript", "image/x-portable-bitmap",
	"image/x-portable-graymap", "image/x-portable-pixmap", "image/x-portable-arbitrarymap",
	"message/rfc822", "text/vnd.familysearch.gedcom",
}

var (
	knownExtensions = map[string]bool{"bin": true, "jpeg": true, "tif": true}
	knownFamilies   = map[string]bool{}
)

func init() {
	for _, t := range detectableTypes {
		if m := mimetype.Lookup(t); m != nil && m.Extension() != "" {
			knownExtensions[strings.TrimPrefix(m.Extension(), ".")] = true
		}
		knownFamilies[t[:strings.IndexByte(t, '/')]] = true
	}
}

// KnownFormat reports whether a validation.formats entry names a format detection can
// find: an extension ("pdf" or ".pdf"), a media type or alias ("application/pdf") or a
// family ("image/*"), in any case.
func KnownFormat(entry string) bool {
	e := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case e == "":
		return false
	case strings.HasSuffix(e, "/*"):
		return knownFamilies[strings.TrimSuffix(e, "/*")]
	case strings.Contains(e, "/"):
		return mimetype.Lookup(e) != nil
	}
	return knownExtensions[strings.TrimPrefix(e, ".")]
}
