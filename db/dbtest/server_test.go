package dbtest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/db/dbtest"
)

func TestStartPostgres(t *testing.T) {
	t.Parallel()
	srv := dbtest.StartPostgres(t)
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(srv.URL()), pgdriver.WithDialTimeout(time.Second)))
	defer db.Close()
	ctx := context.Background()
	_, err := db.ExecContext(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)")
	require.NoError(t, err)

	srv.Stop()
	require.Error(t, db.PingContext(ctx), "stopped")
	srv.Stop() // twice is harmless

	srv.Start()
	var v int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM kept").Scan(&v), "the pool reconnects")
	require.Equal(t, 7, v, "the data survives a restart")
}
