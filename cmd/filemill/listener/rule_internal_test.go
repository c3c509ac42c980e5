package listener

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The deadline of a body's next read, on an injected clock: the read timeout from now,
// never later than what the bytes so far buy at the minimum rate after the grace.
func TestBodyDeadline(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Config{BodyReadTimeout: 10 * time.Second, MinBodyRate: 1000}
	cases := []struct {
		name  string
		read  int64
		now   time.Duration // since the start
		want  time.Duration // since the start
		noMin bool
	}{
		{"AtTheStart", 0, 0, 10 * time.Second, false},
		{"FastBodyGetsTheReadTimeout", 1 << 20, 5 * time.Second, 15 * time.Second, false},
		{"SlowBodyGetsWhatItsBytesBuy", 3000, 9 * time.Second, 13 * time.Second, false},
		{"TrickleIsDueAtOnce", 100, 12 * time.Second, 10*time.Second + 100*time.Millisecond, false},
		{"WithoutAMinimumOnlyTheReadTimeout", 100, 12 * time.Second, 22 * time.Second, true},
		{"HugeBodyDoesNotOverflow", 1 << 62, time.Hour, time.Hour + 10*time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cc := *c
			if tc.noMin {
				cc.MinBodyRate = 0
			}
			b := &guardedBody{c: &cc, start: start, read: tc.read}
			require.Equal(t, start.Add(tc.want), b.deadline(start.Add(tc.now)))
		})
	}
}

func TestAddressKey(t *testing.T) {
	t.Parallel()
	key := func(s string) string {
		a, err := net.ResolveTCPAddr("tcp", s)
		require.NoError(t, err)
		return addressKey(a).String()
	}
	require.Equal(t, "192.0.2.7/32", key("192.0.2.7:5000"))
	require.Equal(t, "192.0.2.7/32", key("[::ffff:192.0.2.7]:5000"), "a mapped IPv4 address is the IPv4 one")
	require.Equal(t, key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:2:ffff::9]:2"), "one /64")
	require.NotEqual(t, key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:3::1]:1"))
}
