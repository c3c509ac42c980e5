package domain

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimits applies the request rate limit of both doors: a token bucket per key,
// holding the key's own limit or the deployment's, or per client address for a request
// no key was accepted for.
//
// When the limiter fails (Redis is down), requests are let through: availability over
// strictness. The outage is logged when first seen, then at most once per
// RateLimitLogInterval with the count of requests let through unchecked, and its end
// once — never a line per request.
type RateLimits struct {
	limiter     RateLimiter
	defaultRate int
	clock       Clock
	log         *slog.Logger

	failing atomic.Bool // the last call failed

	mu       sync.Mutex
	unlogged int       // requests let through unchecked since the last log line
	lastLog  time.Time // of the outage
	lastErr  string
}

// RateLimitLogInterval is the shortest time between two log lines about a failing limiter.
const RateLimitLogInterval = 10 * time.Second

// NewRateLimits applies limiter with perMinute as the default rate; a nil limiter lets
// every request through, as a failing one does.
func NewRateLimits(limiter RateLimiter, perMinute int, clock Clock, log *slog.Logger) *RateLimits {
	if clock == nil {
		clock = SystemClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &RateLimits{limiter: limiter, defaultRate: perMinute, clock: clock, log: log}
}

// Bucket names the bucket a request counts against, and its limit per minute: the key's
// (its own limit when it has one), or the client address's when p is nil.
func (r *RateLimits) Bucket(p *Principal, ip netip.Addr) (bucket string, perMinute int) {
	if p == nil {
		return "ip:" + ip.String(), r.defaultRate
	}
	if p.Key.RateLimit > 0 {
		return "key:" + p.Key.ID, p.Key.RateLimit
	}
	return "key:" + p.Key.ID, r.defaultRate
}

// Allow takes one request from the bucket of p (nil: of the client address ip). A
// refusal is Allowed false with RetryAfter. A failing limiter lets the request through.
func (r *RateLimits) Allow(ctx context.Context, p *Principal, ip netip.Addr) RateDecision {
	bucket, limit := r.Bucket(p, ip)
	return r.check(ctx, bucket, limit, 1)
}

// AllowNamed takes one request from a bucket of its own (sign-in attempts per client
// address) holding perMinute.
func (r *RateLimits) AllowNamed(ctx context.Context, bucket string, perMinute int) RateDecision {
	return r.check(ctx, bucket, perMinute, 1)
}

// Peek reports the bucket of the client address ip without taking from it: for an
// answer that must carry the rate-limit state but was not counted (a request that could
// not be authenticated because a dependency was down).
func (r *RateLimits) Peek(ctx context.Context, ip netip.Addr) RateDecision {
	bucket, limit := r.Bucket(nil, ip)
	return r.check(ctx, bucket, limit, 0)
}

func (r *RateLimits) check(ctx context.Context, bucket string, limit, cost int) RateDecision {
	if r.limiter == nil {
		return RateDecision{Allowed: true, Limit: limit, Remaining: limit}
	}
	d, err := r.limiter.Allow(ctx, bucket, limit, cost)
	r.observe(err)
	if err != nil {
		return RateDecision{Allowed: true, Limit: limit, Remaining: limit}
	}
	return d
}

// observe logs an outage of the limiter as it starts, once per interval while it lasts
// (with how many requests went unchecked), and as it ends.
func (r *RateLimits) observe(err error) {
	if err == nil && !r.failing.Load() {
		return // the common case, without a lock
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil && r.failing.Load():
		r.failing.Store(false)
		r.log.Info("rate limiter available again", "unchecked_requests", r.unlogged)
		r.unlogged = 0
	case err != nil && !r.failing.Load():
		r.failing.Store(true)
		r.lastLog, r.unlogged, r.lastErr = now, 0, err.Error()
		r.log.Warn("rate limiter unavailable; letting requests through unchecked", "error", r.lastErr)
	case err != nil:
		r.unlogged++
		r.lastErr = err.Error()
		if now.Sub(r.lastLog) >= RateLimitLogInterval {
			r.log.Warn("rate limiter still unavailable; letting requests through unchecked",
				"unchecked_requests", r.unlogged, "error", r.lastErr)
			r.lastLog, r.unlogged = now, 0
		}
	}
}
