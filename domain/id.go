package domain

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Identifier prefixes. Every id is a prefix followed by a ULID (26 characters of
// Crockford base32), so ids sort by creation time and reveal their kind.
const (
	PrefixOrganization    = "org_"
	PrefixProject         = "prj_"
	PrefixAPIKey          = "key_"
	PrefixFile            = "file_"
	PrefixUpload          = "upl_"
	PrefixJob             = "job_"
	PrefixBatch           = "bat_"
	PrefixArtifact        = "art_"
	PrefixWebhookEndpoint = "we_"
	PrefixEvent           = "evt_"
	PrefixRequest         = "req_"
	PrefixLedgerEntry     = "led_"
	PrefixDelivery        = "dlv_"
	PrefixDeliveryAttempt = "dla_"
)

var (
	idMu      sync.Mutex
	idEntropy = ulid.Monotonic(rand.Reader, 0)
)

// NewID returns a fresh id with the given prefix. Ids made in one process are strictly
// increasing, which keeps "newest first" ordering stable within a millisecond.
func NewID(prefix string) string {
	idMu.Lock()
	id := ulid.MustNew(ulid.Timestamp(time.Now()), idEntropy)
	idMu.Unlock()
	return prefix + id.String()
}

// ValidID reports whether s is prefix followed by a well-formed ULID.
func ValidID(prefix, s string) bool {
	if !strings.HasPrefix(s, prefix) {
		return false
	}
	rest := s[len(prefix):]
	if len(rest) != ulid.EncodedSize {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !isCrockford(rest[i]) {
			return false
		}
	}
	// The first character carries only 3 bits: a ULID never starts above '7'.
	return rest[0] <= '7'
}

func isCrockford(c byte) bool {
	switch {
	case c >= '0' && c <= '9':
		return true
	case c >= 'A' && c <= 'Z':
		return c != 'I' && c != 'L' && c != 'O' && c != 'U'
	}
	return false
}

// IDAt returns the smallest id with the given prefix that NewID could mint at t: every
// id minted at t or later sorts at or above it, so "id < IDAt(p, t)" selects by age
// through the primary key.
func IDAt(prefix string, t time.Time) string {
	var u ulid.ULID
	_ = u.SetTime(ulid.Timestamp(t)) // fails only after the year 10889
	return prefix + u.String()
}
