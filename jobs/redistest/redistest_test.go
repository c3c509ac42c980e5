package redistest_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/jobs/redistest"
)

func TestURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var inner string
	var innerDB int

	t.Run("ReservesAnEmptyDatabase", func(t *testing.T) {
		inner = redistest.URL(t)
		require.Equal(t, inner, redistest.URL(t), "the same test gets the same database")
		opts, err := redis.ParseURL(inner)
		require.NoError(t, err)
		innerDB = opts.DB
		require.GreaterOrEqual(t, innerDB, 1)
		require.LessOrEqual(t, innerDB, 15)
		c := redis.NewClient(opts)
		defer c.Close()
		n, err := c.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, c.Set(ctx, "left-behind", "x", 0).Err())

		other := make(chan string, 1)
		t.Run("AnotherTestGetsAnotherDatabase", func(t *testing.T) { other <- redistest.URL(t) })
		require.NotEqual(t, inner, <-other)
	})

	// After the test: flushed and released.
	opts, err := redis.ParseURL(inner)
	require.NoError(t, err)
	c := redis.NewClient(opts)
	defer c.Close()
	require.Zero(t, c.Exists(ctx, "left-behind").Val())
	opts.DB = 0
	admin := redis.NewClient(opts)
	defer admin.Close()
	// Another test may have taken the database since; it must not hold our token.
	holder, err := admin.Get(ctx, "fm:testdb:"+strconv.Itoa(innerDB)).Result()
	if err == nil {
		require.NotContains(t, holder, "ReservesAnEmptyDatabase")
	} else {
		require.ErrorIs(t, err, redis.Nil)
	}
}
