package main

import (
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
