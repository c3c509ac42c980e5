// Package logging keeps the processes' logs readable while something is broken: a
// condition that repeats (a dependency that is down, seen by every request or attempt)
// is logged once per interval with a count, and the drivers' own printf-style loggers
// are sent through log/slog, so every line is JSON.
//
// It imports the standard library only: every package may use it, and cmd wires the
// drivers to it.
package logging

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Repeated logs recurring events at most once per interval per key. The first
// occurrence of a key is logged at once with count 1; the ones that follow within the
// interval are only counted, and when the interval ends one line stands for them all,
// with their count and the attributes of the last. Safe for concurrent use.
type Repeated struct {
	log      *slog.Logger
	interval time.Duration

	mu   sync.Mutex
	keys map[string]*repeat
}

// repeat is one key's state.
type repeat struct {
	logged time.Time // when its last line was written
	count  int       // occurrences since then, not yet in a line
	level  slog.Level
	msg    string
	args   []any
	timer  *time.Timer // writes the pending line at the end of the interval
}

// NewRepeated returns a Repeated writing to l (slog.Default() when nil).
func NewRepeated(l *slog.Logger, interval time.Duration) *Repeated {
	if l == nil {
		l = slog.Default()
	}
	return &Repeated{log: l, interval: interval, keys: map[string]*repeat{}}
}

// Log records one occurrence of the event key: a line now when key had none within the
// interval, otherwise a count in the line written when the interval ends. The line
// carries msg, args, "count" (the occurrences it stands for) and, after the first,
// "interval".
func (r *Repeated) Log(ctx context.Context, level slog.Level, key, msg string, args ...any) {
	if !r.log.Enabled(ctx, level) {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.keys[key]
	if rp == nil || (rp.count == 0 && now.Sub(rp.logged) >= r.interval) {
		if rp == nil {
			r.forgetIdle(now)
			rp = &repeat{}
			r.keys[key] = rp
		}
		rp.logged = now
		r.log.Log(ctx, level, msg, append(slices.Clip(args), "count", 1)...)
		return
	}
	rp.count++
	rp.level, rp.msg, rp.args = level, msg, args
	if rp.timer == nil {
		rp.timer = time.AfterFunc(rp.logged.Add(r.interval).Sub(now), func() { r.flush(key) })
	}
}

// flush writes a key's pending line.
func (r *Repeated) flush(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.keys[key]
	if rp == nil || rp.count == 0 {
		return
	}
	r.log.Log(context.Background(), rp.level, rp.msg, append(slices.Clip(rp.args), "count", rp.count, "interval", r.interval.String())...)
	rp.logged, rp.count, rp.args, rp.timer = time.Now(), 0, nil, nil
}

// forgetIdle drops keys quiet for an interval, so keys that come and go (a key per
// failing host, say) cannot grow the map without bound.
func (r *Repeated) forgetIdle(now time.Time) {
	if len(r.keys) < 64 {
		return
	}
	for k, rp := range r.keys {
		if rp.count == 0 && now.Sub(rp.logged) >= r.interval {
			delete(r.keys, k)
		}
	}
}

// Printer is a printf-style logger, the kind the go-redis and PostgreSQL drivers take,
// that writes through a Repeated: one line per format per interval, so a driver
// reporting every failed dial while its server is down writes a line per interval.
type Printer struct {
	R         *Repeated
	Level     slog.Level
	Component string // e.g. "redis", "postgres"
}

// Printf logs one line of the driver's.
func (p Printer) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	p.R.Log(ctx, p.Level, p.Component+"\x00"+format, fmt.Sprintf(format, v...), "component", p.Component)
}

// PlainPrinter is a Printer for loggers whose Printf takes no context (bun's).
type PlainPrinter struct{ Printer }

// Printf logs one line of the library's.
func (p PlainPrinter) Printf(format string, v ...any) {
	p.Printer.Printf(context.Background(), format, v...)
}
