package netguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVetAddr(t *testing.T) {
	t.Parallel()
	refused := map[string]string{
		"10.0.0.1":           "private",
		"172.16.5.4":         "private",
		"192.168.1.1":        "private",
		"127.0.0.1":          "loopback",
		"169.254.169.254":    "link-local",
		"0.0.0.0":            "unspecified",
		"0.1.2.3":            "reserved",
		"::1":                "loopback",
		"::":                 "unspecified",
		"fe80::1":            "link-local",
		"fc00::1":            "private",
		"fd12:3456::1":       "private",
		"::ffff:127.0.0.1":   "loopback",
		"::ffff:7f00:1":      "loopback",
		"::ffff:10.0.0.1":    "private",
		"64:ff9b::a00:1":     "private",
		"64:ff9b::a9fe:a9fe": "link-local",
		"2002:c0a8:101::1":   "private",
		"::127.0.0.1":        "reserved",
		"100.64.0.1":         "shared",
		"224.0.0.1":          "multicast",
		"ff02::1":            "multicast",
		"255.255.255.255":    "broadcast",
		"240.0.0.1":          "reserved",
		"192.0.0.8":          "reserved",
		"198.18.0.1":         "benchmarking",
		"192.0.2.1":          "documentation",
		"198.51.100.7":       "documentation",
		"203.0.113.9":        "documentation",
		"2001:db8::1":        "documentation",
		"2001::1":            "reserved",
		"fec0::1":            "private",
	}
	for s, reason := range refused {
		t.Run("Refuses "+s, func(t *testing.T) {
			got := VetAddr(netip.MustParseAddr(s), nil)
			require.Contains(t, got, reason)
		})
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "2a00:1450:4001::1", "64:ff9b::5db8:d822", "::ffff:93.184.216.34"} {
		t.Run("Passes "+s, func(t *testing.T) {
			require.Empty(t, VetAddr(netip.MustParseAddr(s), nil))
		})
	}

	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, s := range []string{"10.1.2.3", "::ffff:10.1.2.3", "64:ff9b::a01:203", "fd00::5"} {
		t.Run("AllowCIDRs opens "+s, func(t *testing.T) {
			require.Empty(t, VetAddr(netip.MustParseAddr(s), allow))
		})
	}
	t.Run("AllowCIDRs leaves others closed", func(t *testing.T) {
		require.Contains(t, VetAddr(netip.MustParseAddr("192.168.0.1"), allow), "private")
	})
	t.Run("AllowCIDRs never opens unspecified, multicast, broadcast", func(t *testing.T) {
		all := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
		for _, s := range []string{"0.0.0.0", "::", "::ffff:0.0.0.0", "224.0.0.1", "255.255.255.255", "ff02::1"} {
			require.NotEmpty(t, VetAddr(netip.MustParseAddr(s), all), s)
		}
		require.Empty(t, VetAddr(netip.MustParseAddr("127.0.0.1"), all))
	})
	t.Run("Zones are refused", func(t *testing.T) {
		require.NotEmpty(t, VetAddr(netip.MustParseAddr("fe80::1%eth0"), []netip.Prefix{netip.MustParsePrefix("::/0")}))
	})
}

func TestParseHostIP(t *testing.T) {
	t.Parallel()
	loopback := netip.MustParseAddr("127.0.0.1")
	for _, h := range []string{"2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "0x7f000001", "017700000001",
		"0x7F.1", "127.0.1", "127.0.0.1.", "0177.0x0.0.01"} {
		t.Run("Reads "+h, func(t *testing.T) {
			a, isIP, err := ParseHostIP(h)
			require.NoError(t, err)
			require.True(t, isIP)
			require.Equal(t, loopback, a)
		})
	}
	for h, want := range map[string]string{"0": "0.0.0.0", "0x": "0.0.0.0", "4294967295": "255.255.255.255",
		"10.0x10000": "10.1.0.0", "::ffff:7f00:1": "::ffff:127.0.0.1", "1.2.3.4": "1.2.3.4"} {
		t.Run("Reads "+h, func(t *testing.T) {
			a, isIP, err := ParseHostIP(h)
			require.NoError(t, err)
			require.True(t, isIP)
			require.Equal(t, netip.MustParseAddr(want), a)
		})
	}
	for _, h := range []string{"4294967296", "1.2.3.4.5", "08.0.0.1", "256.0.0.1", "1.2.65536", "example.123",
		"0x1g.0.0.1", "1..2.3", "99999999999999999999999"} {
		t.Run("Refuses "+h, func(t *testing.T) {
			_, isIP, err := ParseHostIP(h)
			require.True(t, isIP)
			require.Error(t, err)
		})
	}
	for _, h := range []string{"example.com", "0x7f.example.com", "127.0.0.1.nip.io", "localhost", "a1"} {
		t.Run("Leaves name "+h, func(t *testing.T) {
			_, isIP, err := ParseHostIP(h)
			require.NoError(t, err)
			require.False(t, isIP)
		})
	}
}

type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	res := staticResolver{
		"public.example":   {netip.MustParseAddr("93.184.215.14")},
		"metadata.example": {netip.MustParseAddr("169.254.169.254")},
		"mixed.example":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.1.2.3")},
		"local.example":    {netip.MustParseAddr("127.0.0.1")},
	}
	g := &Guard{Resolver: res}
	ctx := context.Background()
	for _, raw := range []string{"https://127.0.0.1/h", "https://localhost.:443/h", "https://[::1]/h", "https://10.0.0.8/h",
		"https://192.168.1.1/h", "https://169.254.169.254/latest/meta-data", "https://2130706433/h", "https://0x7f.1/h",
		"https://[::ffff:169.254.169.254]/h", "https://metadata.example/h", "https://mixed.example/h", "https://local.example/h",
		"http://public.example/h", "https://user:pw@public.example/h", "https://nowhere.example/h", "https://public.example:0/h"} {
		t.Run("Refuses "+raw, func(t *testing.T) {
			_, err := g.Check(ctx, raw)
			var re *RefusedError
			require.ErrorAs(t, err, &re)
		})
	}
	tg, err := g.Check(ctx, "https://public.example:8443/in")
	require.NoError(t, err)
	require.Equal(t, uint16(8443), tg.Port)
	require.Equal(t, []netip.Addr{netip.MustParseAddr("93.184.215.14")}, tg.Addrs)

	open := &Guard{Resolver: res, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	_, err = open.Check(ctx, "https://local.example/h")
	require.NoError(t, err)
	_, err = open.Check(ctx, "https://127.0.0.1:9/h")
	require.NoError(t, err)
	require.Error(t, open.Control("tcp", "10.0.0.1:443", nil))
	require.NoError(t, open.Control("tcp", "127.0.0.1:443", nil))
	require.Error(t, open.Control("tcp", "0.0.0.0:443", nil), "unspecified stays refused whatever the allow list")
}

func TestParseAllowCIDRs(t *testing.T) {
	t.Parallel()
	got, err := ParseAllowCIDRs("10.0.0.0/8, 192.168.1.7 fd00::/8,172.16.5.4/12")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("172.16.0.0/12"),
	}, got)
	_, err = ParseAllowCIDRs("intranet")
	require.Error(t, err)
}
