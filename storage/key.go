package storage

import (
	"fmt"
	"net/url"
	"strings"
)

// maxKeyLen keeps keys well within file system path limits.
const maxKeyLen = 1024

// checkKey accepts clean relative slash paths: no empty segments, no segment beginning
// with "." (which also refuses "." and "..", and keeps keys out of Local's .tmp and
// .uploads), no backslashes or control characters.
func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("%w: %q must be 1 to %d bytes", ErrInvalidKey, key, maxKeyLen)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" {
			return fmt.Errorf("%w: %q has an empty segment or is absolute", ErrInvalidKey, key)
		}
		if seg[0] == '.' {
			return fmt.Errorf("%w: %q has a segment beginning with a dot", ErrInvalidKey, key)
		}
		for _, c := range []byte(seg) {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return fmt.Errorf("%w: %q contains a control character or backslash", ErrInvalidKey, key)
			}
		}
	}
	return nil
}

// checkPrefix accepts what checkKey accepts, followed by "/": a prefix never matches
// part of a segment.
func checkPrefix(prefix string) error {
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%w: prefix %q must end with /", ErrInvalidKey, prefix)
	}
	return checkKey(strings.TrimSuffix(prefix, "/"))
}

// checkListing checks a listing's prefix ("" for the whole store, else as checkPrefix);
// none when limit asks for nothing.
func checkListing(prefix string, limit int) (none bool, err error) {
	if prefix != "" {
		if err := checkPrefix(prefix); err != nil {
			return false, err
		}
	}
	return limit <= 0, nil
}

// escapeKey escapes each segment of a key for a URL path, keeping the slashes.
func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
