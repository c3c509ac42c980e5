// Package ratelimit is the domain.RateLimiter on Redis: a token bucket per key that
// every API process shares. It knows nothing of HTTP; both doors apply it through
// domain.RateLimits, which decides the bucket, the limit and what to do while Redis is
// down. It imports domain and go-redis only.
package ratelimit
