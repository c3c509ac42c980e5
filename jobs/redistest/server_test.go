package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/jobs/redistest"
)

func TestStartRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.StartRedis(t)
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	srv.Stop()
	require.Error(t, c.Ping(ctx).Err(), "stopped")
	srv.Stop() // twice is harmless

	srv.Start()
	n, err := c.Exists(ctx, "k").Result()
	require.NoError(t, err, "the client reconnects")
	require.Zero(t, n, "a restarted server keeps nothing")
}
