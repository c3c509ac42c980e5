package storage

import "errors"

var (
	// ErrPartMismatch is returned by CompleteMultipart when a given part is missing from
	// the store, its ETag differs from the stored part's, or the parts are not numbered
	// 1..n in ascending order. The message names the part number.
	ErrPartMismatch = errors.New("multipart parts do not match the stored parts")
	// ErrInvalidKey refuses an object key that is not a clean relative slash path.
	ErrInvalidKey = errors.New("invalid object key")
)
