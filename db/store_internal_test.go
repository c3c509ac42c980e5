package db

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, path, params string
		bad               bool
	}{
		{url: "/data/filemill.db", path: "/data/filemill.db"},
		{url: "data/filemill.db", path: "data/filemill.db"},
		{url: "sqlite:///data/filemill.db", path: "/data/filemill.db"},
		{url: "sqlite://data/filemill.db", path: "data/filemill.db"},
		{url: "sqlite:data/filemill.db", path: "data/filemill.db"},
		{url: "file:/data/filemill.db", path: "/data/filemill.db"},
		{url: "file:///data/filemill.db", path: "/data/filemill.db"},
		{url: "/data/filemill.db?_pragma=cache_size(-8000)", path: "/data/filemill.db", params: "_pragma=cache_size(-8000)"},
		{url: ":memory:", path: ":memory:"},
		{url: "", bad: true},
		{url: "sqlite://", bad: true},
		{url: "mysql://u:p@host/db", bad: true},
	} {
		path, params, err := sqlitePath(tc.url)
		if tc.bad {
			require.Error(t, err, tc.url)
			continue
		}
		require.NoError(t, err, tc.url)
		require.Equal(t, tc.path, path, tc.url)
		require.Equal(t, tc.params, params, tc.url)
	}
}

// TestSQLiteReadersAreReadOnly: a write routed to the read pool by mistake must fail,
// not become a second writer.
func TestSQLiteReadersAreReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ro.db"))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	_, err = s.read.ExecContext(ctx, "INSERT INTO organizations (id, name, status, created_at) VALUES ('org_x', 'x', 'active', '2026-01-01 00:00:00+00:00')")
	require.Error(t, err)
	_, err = s.db.ExecContext(ctx, "INSERT INTO organizations (id, name, status, created_at) VALUES ('org_x', 'x', 'active', '2026-01-01 00:00:00+00:00')")
	require.NoError(t, err)
	require.Equal(t, 1, s.db.Stats().MaxOpenConnections, "one writer connection")
}
