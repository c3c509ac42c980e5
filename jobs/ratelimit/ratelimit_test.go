package ratelimit

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/redistest"
)

// rateLimitBackend is a Redis the limiter runs on. On miniredis the server clock is
// frozen and moved by hand, so the token arithmetic can be checked exactly; on real
// Redis time runs, so the checks allow for what refills while the test runs.
type rateLimitBackend struct {
	client *redis.Client
	// advance moves the server clock; only when exact. The limiter reads Redis's TIME
	// (one clock for every API process), which real Redis cannot be told to fake.
	advance func(time.Duration)
	exact   bool
}

func rateLimitBackends() map[string]func(t *testing.T) rateLimitBackend {
	return map[string]func(t *testing.T) rateLimitBackend{
		"Redis": func(t *testing.T) rateLimitBackend {
			opts, err := redis.ParseURL(redistest.URL(t))
			require.NoError(t, err)
			c := redis.NewClient(opts)
			t.Cleanup(func() { c.Close() })
			return rateLimitBackend{client: c}
		},
		"Miniredis": func(t *testing.T) rateLimitBackend {
			m := miniredis.RunT(t)
			now := time.Date(2026, 11, 22, 12, 0, 0, 123456000, time.UTC)
			m.SetTime(now)
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { c.Close() })
			return rateLimitBackend{client: c, exact: true, advance: func(d time.Duration) {
				now = now.Add(d)
				m.SetTime(now)
			}}
		},
	}
}

// requireFullIn checks the time until an emptied bucket is full again: exactly a minute on
// the injected clock; on real Redis, what refilled while the burst ran (elapsed) comes off,
// rounded to whole seconds.
func requireFullIn(t *testing.T, b rateLimitBackend, elapsed, reset time.Duration) {
	t.Helper()
	if b.exact {
		require.Equal(t, 60*time.Second, reset)
		return
	}
	require.LessOrEqual(t, reset, 60*time.Second)
	require.GreaterOrEqual(t, reset, 60*time.Second-elapsed-time.Second)
}

func TestRedisRateLimiter(t *testing.T) {
	t.Parallel()
	for name, open := range rateLimitBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()

			t.Run("BurstThenRefuse", func(t *testing.T) {
				b := open(t)
				l := New(b.client)
				start := time.Now()
				for i := 1; i <= 600; i++ {
					d, err := l.Allow(ctx, "burst", 600, 1)
					require.NoError(t, err)
					require.True(t, d.Allowed, "request %d of the burst", i)
					require.Equal(t, 600, d.Limit)
					require.Zero(t, d.RetryAfter)
					if b.exact {
						require.Equal(t, 600-i, d.Remaining, "request %d", i)
					}
					switch i {
					case 1:
						// 0.1 s until the one token comes back, rounded up.
						require.Equal(t, 599, d.Remaining)
						require.Equal(t, time.Second, d.Reset)
					case 600:
						requireFullIn(t, b, time.Since(start), d.Reset)
					}
				}
				// On real Redis a token comes back every 100 ms of the burst.
				slack := int(time.Since(start)/(100*time.Millisecond)) + 1
				if b.exact {
					slack = 0
				}
				refused := false
				for i := 0; i <= slack && !refused; i++ {
					d, err := l.Allow(ctx, "burst", 600, 1)
					require.NoError(t, err)
					if !d.Allowed {
						refused = true
						require.Equal(t, 0, d.Remaining)
						require.Equal(t, time.Second, d.RetryAfter, "0.1 s until a token, rounded up")
						requireFullIn(t, b, time.Since(start), d.Reset)
					}
				}
				require.True(t, refused, "request 601 within the same instant must be refused")
			})

			t.Run("RefillsAtPerMinuteOverSixty", func(t *testing.T) {
				b := open(t)
				l := New(b.client)
				for range 600 {
					_, err := l.Allow(ctx, "refill", 600, 1)
					require.NoError(t, err)
				}
				var refused time.Time
				for {
					refused = time.Now()
					d, err := l.Allow(ctx, "refill", 600, 1)
					require.NoError(t, err)
					if !d.Allowed {
						break
					}
				}
				if b.exact {
					b.advance(150 * time.Millisecond) // one token at 10 per second
				} else {
					// Redis's clock runs: look at the bucket, which takes nothing, until a
					// token is back.
					eventually.True(t, "a token to come back", func() bool {
						d, err := l.Allow(ctx, "refill", 600, 0)
						require.NoError(t, err)
						return d.Remaining >= 1
					})
				}
				d, err := l.Allow(ctx, "refill", 600, 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				// The refused request found less than a token; one has come back every 100 ms
				// since, however long the look took.
				require.LessOrEqual(t, d.Remaining, int(time.Since(refused)/(100*time.Millisecond)))
				if b.exact {
					require.Equal(t, 0, d.Remaining)
					d, err = l.Allow(ctx, "refill", 600, 1)
					require.NoError(t, err)
					require.False(t, d.Allowed, "the half token left is not a request")
					require.Equal(t, time.Second, d.RetryAfter)

					b.advance(time.Minute)
					d, err = l.Allow(ctx, "refill", 600, 1)
					require.NoError(t, err)
					require.True(t, d.Allowed)
					require.Equal(t, 599, d.Remaining, "full again after a minute, never more")
				}
			})

			t.Run("HeaderMathWithUnevenInterval", func(t *testing.T) {
				b := open(t)
				l := New(b.client)
				// 7 per minute: a token every 8.571 s, long enough for real Redis too.
				d, err := l.Allow(ctx, "uneven", 7, 1)
				require.NoError(t, err)
				require.Equal(t, 6, d.Remaining)
				require.Equal(t, 9*time.Second, d.Reset)
				for range 6 {
					d, err = l.Allow(ctx, "uneven", 7, 1)
					require.NoError(t, err)
					require.True(t, d.Allowed)
				}
				require.Equal(t, 0, d.Remaining)
				require.Equal(t, 60*time.Second, d.Reset)
				d, err = l.Allow(ctx, "uneven", 7, 1)
				require.NoError(t, err)
				require.False(t, d.Allowed)
				require.Equal(t, 9*time.Second, d.RetryAfter)
				if !b.exact {
					return // real Redis would need an 8 s sleep for the rest
				}

				b.advance(8 * time.Second)
				d, err = l.Allow(ctx, "uneven", 7, 1)
				require.NoError(t, err)
				require.False(t, d.Allowed)
				require.Equal(t, time.Second, d.RetryAfter, "0.571 s left, rounded up")
				require.Equal(t, 52*time.Second, d.Reset)
			})

			t.Run("SeparateKeysAreIndependent", func(t *testing.T) {
				b := open(t)
				l := New(b.client)
				for range 3 {
					d, err := l.Allow(ctx, "key_a", 3, 1)
					require.NoError(t, err)
					require.True(t, d.Allowed)
				}
				d, err := l.Allow(ctx, "key_a", 3, 1)
				require.NoError(t, err)
				require.False(t, d.Allowed)
				require.GreaterOrEqual(t, d.RetryAfter, time.Second)

				d, err = l.Allow(ctx, "key_b", 3, 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				require.Equal(t, 2, d.Remaining)
			})

			t.Run("BucketKeyExpires", func(t *testing.T) {
				b := open(t)
				l := New(b.client)
				_, err := l.Allow(ctx, "ip:192.0.2.1", 600, 1)
				require.NoError(t, err)
				ttl, err := b.client.PTTL(ctx, "fm:rl:ip:192.0.2.1").Result()
				require.NoError(t, err)
				require.Greater(t, ttl, time.Minute)
				require.LessOrEqual(t, ttl, 2*time.Minute)
			})

			t.Run("OneRoundTripPerAllow", func(t *testing.T) {
				b := open(t)
				var calls atomic.Int64
				var names []string
				b.client.AddHook(countingHook{calls: &calls, names: &names})
				l := New(b.client)
				_, err := l.Allow(ctx, "trips", 600, 1) // loads the script once (NOSCRIPT, then EVAL)
				require.NoError(t, err)
				calls.Store(0)
				names = nil
				for range 10 {
					_, err := l.Allow(ctx, "trips", 600, 1)
					require.NoError(t, err)
				}
				require.EqualValues(t, 10, calls.Load())
				for _, n := range names {
					require.Equal(t, "evalsha", n)
				}
			})

			t.Run("PeekTakesNothing", func(t *testing.T) {
				b := open(t)
				l := New(b.client)
				d, err := l.Allow(ctx, "peek", 5, 0)
				require.NoError(t, err)
				require.Equal(t, 5, d.Remaining, "an unused bucket is full")
				for range 2 {
					_, err := l.Allow(ctx, "peek", 5, 1)
					require.NoError(t, err)
				}
				for range 3 {
					d, err = l.Allow(ctx, "peek", 5, 0)
					require.NoError(t, err)
					require.LessOrEqual(t, d.Remaining, 3)
					require.GreaterOrEqual(t, d.Remaining, 2, "looking took nothing")
				}
				if b.exact {
					require.Equal(t, 3, d.Remaining)
				}
			})

			t.Run("RejectsLimitBelowOne", func(t *testing.T) {
				b := open(t)
				_, err := New(b.client).Allow(ctx, "zero", 0, 1)
				require.ErrorContains(t, err, "at least 1")
			})
		})
	}
}

// countingHook counts the commands sent to Redis.
type countingHook struct {
	calls *atomic.Int64
	names *[]string
}

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.calls.Add(1)
		*h.names = append(*h.names, cmd.Name())
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.calls.Add(1)
		return next(ctx, cmds)
	}
}

// TestRedisDown: a Redis that cannot be reached is a failure of the limiter marked
// domain.ErrUnavailable (what domain.RateLimits lets requests through on), not a refusal.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	_, err = New(c).Allow(context.Background(), "down", 600, 1)
	require.Error(t, err)
	require.ErrorIs(t, err, domain.ErrUnavailable)
}
