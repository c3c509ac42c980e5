package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/domain"
)

// rateLimitKeyPrefix namespaces the buckets in Redis.
const rateLimitKeyPrefix = "fm:rl:"

// rateLimitKeyTTL lets an idle bucket vanish. A bucket is full again at most a minute
// after its last request, and a full bucket is the same as no bucket, so deleting it
// after two minutes loses nothing.
const rateLimitKeyTTL = 2 * time.Minute

// tokenBucketScript takes one token from a bucket, in one round trip, atomically for
// every API process sharing the Redis.
//
// The bucket holds perMinute tokens and refills perMinute/60 per second. It is stored
// as one number (the GCRA form of a token bucket): the moment, in microseconds, at
// which the bucket will be full again. Tokens now = (60 s - (full_at - now)) / interval,
// where interval = 60 s / perMinute is the time one token takes to come back.
//
// The clock is the Redis server's TIME, so API processes on different hosts share one
// clock. Redis 7 replicates a script's effects, not the script, so reading TIME before
// writing is allowed; miniredis answers TIME too. Numbers go to SET as Lua numbers (not
// string.format) because both Redis ("%.17g") and miniredis (integers printed whole)
// then write all sixteen digits of a microsecond timestamp.
//
// KEYS[1] bucket; ARGV[1] perMinute; ARGV[2] key expiry in milliseconds; ARGV[3] cost,
// 1, or 0 to report the bucket without taking from it.
// Returns {allowed 0|1, whole tokens left, µs until full, µs until one token}.
var tokenBucketScript = redis.NewScript(`
local capacity = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local window = 60000000
local interval = window / capacity
local full_at = tonumber(redis.call('GET', KEYS[1]) or now)
if full_at < now then full_at = now end
if tonumber(ARGV[3]) == 0 then
  return {1, math.floor((window - (full_at - now)) / interval + 1e-9), math.ceil(full_at - now), 0}
end
local wait = full_at + interval - window - now
local allowed = 0
if wait <= 0 then
  allowed = 1
  wait = 0
  full_at = full_at + interval
  redis.call('SET', KEYS[1], math.floor(full_at), 'PX', tonumber(ARGV[2]))
end
local remaining = math.floor((window - (full_at - now)) / interval + 1e-9)
return {allowed, remaining, math.ceil(full_at - now), math.ceil(wait)}
`)

// Limiter is a token bucket per key, kept in Redis so every API process shares it. It
// implements domain.RateLimiter.
type Limiter struct {
	client redis.UniversalClient
}

var _ domain.RateLimiter = (*Limiter)(nil)

// New returns a limiter over client.
func New(client redis.UniversalClient) *Limiter {
	return &Limiter{client: client}
}

// Allow takes cost requests (1, or 0 to look) from key's bucket of perMinute requests.
// Remaining is the whole requests left, Reset the time until the bucket is full (whole
// seconds, rounded up), RetryAfter the time until the next request is allowed (whole
// seconds, at least one) when refused. One round trip to Redis (EVALSHA; EVAL once after
// a restart). A Redis that cannot be reached is domain.ErrUnavailable.
func (l *Limiter) Allow(ctx context.Context, key string, perMinute, cost int) (domain.RateDecision, error) {
	if perMinute < 1 {
		return domain.RateDecision{}, fmt.Errorf("rate limit %q: %d per minute; must be at least 1", key, perMinute)
	}
	if cost != 0 && cost != 1 {
		return domain.RateDecision{}, fmt.Errorf("rate limit %q: cost %d; must be 0 or 1", key, cost)
	}
	res, err := tokenBucketScript.Run(ctx, l.client, []string{rateLimitKeyPrefix + key},
		perMinute, rateLimitKeyTTL.Milliseconds(), cost).Int64Slice()
	if err != nil {
		if domain.IsUnreachable(err) {
			err = domain.MarkUnavailable("redis", err)
		}
		return domain.RateDecision{}, fmt.Errorf("rate limit %q: %w", key, err)
	}
	if len(res) != 4 {
		return domain.RateDecision{}, errors.New("rate limit: unexpected script reply")
	}
	d := domain.RateDecision{
		Allowed:    res[0] == 1,
		Limit:      perMinute,
		Remaining:  int(min(max(res[1], 0), int64(perMinute))),
		Reset:      ceilSeconds(res[2]),
		RetryAfter: ceilSeconds(res[3]),
	}
	if !d.Allowed && d.RetryAfter < time.Second {
		d.RetryAfter = time.Second
	}
	return d, nil
}

// ceilSeconds rounds microseconds up to whole seconds, as the headers carry them.
func ceilSeconds(us int64) time.Duration {
	if us <= 0 {
		return 0
	}
	return time.Duration((us+999_999)/1_000_000) * time.Second
}
