// Package eventually is the one way the tests wait for what another goroutine or process
// makes true: poll a condition, quickly at first and then every 100 ms, and fail with what
// was awaited once a bound generous enough for a loaded machine has passed. A test that can
// wait on an event (a channel, a subscription) does that instead.
package eventually

import "time"

// Bound is how long a condition may take. It is not a performance claim: two busy cores
// running the whole suite in parallel must never reach it.
const Bound = 3 * time.Minute

// T is the part of testing.TB the helpers use.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// True waits until cond holds, or fails the test naming what.
func True(t T, what string, cond func() bool) {
	t.Helper()
	Value(t, what, func() (struct{}, bool) { return struct{}{}, cond() })
}

// Value waits until f reports ok and returns its value, or fails the test naming what.
func Value[V any](t T, what string, f func() (V, bool)) V {
	t.Helper()
	v, err := Wait(Bound, f)
	if err != nil {
		t.Fatalf("waited %v for %s", Bound, what)
	}
	return v
}

// ErrTimeout is what Wait answers when the bound passed.
var ErrTimeout = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string { return "the condition did not hold in time" }

// Wait polls f until it reports ok or bound passes; for callers that are not tests
// (a TestMain, a benchmark's set-up) and handle the error themselves.
func Wait[V any](bound time.Duration, f func() (V, bool)) (V, error) {
	deadline := time.Now().Add(bound)
	pause := time.Millisecond
	for {
		if v, ok := f(); ok {
			return v, nil
		}
		if time.Now().After(deadline) {
			var zero V
			return zero, ErrTimeout
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
