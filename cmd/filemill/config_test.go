package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlagNamesFollowVariables keeps the README's rule true: a setting's flag is its
// variable without FILEMILL_, lower case, with dashes.
func TestFlagNamesFollowVariables(t *testing.T) {
	for _, s := range (&rawConfig{}).settings() {
		want := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.env, "FILEMILL_")), "_", "-")
		require.Equal(t, want, s.flag, s.env)
	}
}

// TestMetricsAddress: the metrics listen on loopback by default; an empty
// FILEMILL_METRICS_ADDR, or off, serves none.
func TestMetricsAddress(t *testing.T) {
	for _, c := range []struct {
		name, value string
		set         bool
		want        string
	}{
		{"Unset", "", false, "127.0.0.1:9090"},
		{"Given", "0.0.0.0:9100", true, "0.0.0.0:9100"},
		{"Empty", "", true, ""},
		{"Off", "off", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FILEMILL_METRICS_ADDR", c.value)
			if !c.set {
				require.NoError(t, os.Unsetenv("FILEMILL_METRICS_ADDR"))
			}
			cfg, err := loadConfig(&rawConfig{})
			require.NoError(t, err)
			require.Equal(t, c.want, cfg.MetricsAddr)
		})
	}
	t.Run("Flag", func(t *testing.T) {
		t.Setenv("FILEMILL_METRICS_ADDR", "")
		cfg, err := loadConfig(&rawConfig{metricsAddr: "127.0.0.1:9999"})
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:9999", cfg.MetricsAddr, "a flag wins over the variable")
	})
}

// TestJobLimits: the per-job bounds are read from their variables; auto derives the
// scratch bound from each job's input.
func TestJobLimits(t *testing.T) {
	cfg, err := loadConfig(&rawConfig{})
	require.NoError(t, err)
	require.EqualValues(t, 2<<30, cfg.Domain.JobMemory)
	require.Zero(t, cfg.Domain.JobDisk, "auto")
	require.EqualValues(t, 20<<30, cfg.Domain.JobDiskMax)
	t.Setenv("FILEMILL_JOB_MEMORY_LIMIT", "536870912")
	t.Setenv("FILEMILL_JOB_DISK_LIMIT", "1073741824")
	cfg, err = loadConfig(&rawConfig{})
	require.NoError(t, err)
	require.EqualValues(t, 512<<20, cfg.Domain.JobMemory)
	require.EqualValues(t, 1<<30, cfg.Domain.JobDisk)
	t.Setenv("FILEMILL_JOB_DISK_LIMIT", "lots")
	_, err = loadConfig(&rawConfig{})
	require.ErrorContains(t, err, "FILEMILL_JOB_DISK_LIMIT")
}
