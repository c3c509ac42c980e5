package domain

import (
	"sync"
	"time"
)

// authCache remembers recently authenticated keys with their organization, so a busy key
// does not cost a database round trip per request. Entries live for ttl: a revocation or
// suspension made by another process (the admin CLI, another API process) takes effect
// within ttl; one made through this process's services takes effect at once.
type authCache struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[string]authEntry // by key hash
}

type authEntry struct {
	key     *APIKey
	org     *Organization
	prj     *Project
	fetched time.Time
}

func newAuthCache(ttl time.Duration, max int) *authCache {
	if ttl <= 0 || max <= 0 {
		return nil
	}
	return &authCache{ttl: ttl, max: max, m: make(map[string]authEntry)}
}

// get returns copies, so a caller cannot change what the next request sees.
func (c *authCache) get(hash string, now time.Time) (*Principal, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	e, ok := c.m[hash]
	c.mu.Unlock()
	if !ok || now.Sub(e.fetched) >= c.ttl || now.Before(e.fetched) {
		return nil, false
	}
	k, o, p := *e.key, *e.org, *e.prj
	return &Principal{Key: &k, Organization: &o, Project: &p}, true
}

func (c *authCache) put(hash string, pr *Principal, now time.Time) {
	if c == nil {
		return
	}
	k, o, p := *pr.Key, *pr.Organization, *pr.Project
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		// Bounded: under a flood of distinct keys, start over rather than grow.
		clear(c.m)
	}
	c.m[hash] = authEntry{key: &k, org: &o, prj: &p, fetched: now}
}

// forget drops the entries that match.
func (c *authCache) forget(match func(key *APIKey) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.m {
		if match(e.key) {
			delete(c.m, h)
		}
	}
}
