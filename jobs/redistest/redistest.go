// Package redistest gives each test a Redis database of its own on a real server.
//
// The server is TEST_REDIS_URL (default redis://127.0.0.1:6379). Databases 1 to 15 are
// handed out through reservation keys in database 0, so tests of different packages,
// which go test runs as separate processes, never share one. A test that cannot reach
// Redis fails: it is never skipped.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	firstDB, lastDB = 1, 15
	reservationTTL  = 15 * time.Minute
	// A test that ran longer than reservationTTL would lose its database to another;
	// the reservation is renewed while the test runs.
	renewEvery  = time.Minute
	waitForFree = 60 * time.Second
)

// reservedURLs remembers each test's database, so a test asking twice (say, once for
// the queue and once for the rate limiter) gets the same one.
var reservedURLs sync.Map // testing.TB -> string

// releaseIfOurs deletes (or renews) a reservation only while it still holds our token:
// after an expiry another test may own it.
var (
	releaseIfOurs = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	renewIfOurs   = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
)

// URL returns a redis:// URL of a database reserved for t, empty at the start and
// flushed and released when t ends. Calling it again in the same test returns the same
// URL.
func URL(t testing.TB) string {
	t.Helper()
	if u, ok := reservedURLs.Load(t); ok {
		return u.(string)
	}
	base := os.Getenv("TEST_REDIS_URL")
	if base == "" {
		base = "redis://127.0.0.1:6379"
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("redistest: TEST_REDIS_URL is not a URL: %v", err)
	}
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("redistest: TEST_REDIS_URL %s: %v", u.Redacted(), err)
	}
	opts.DB = 0
	ctx := context.Background()
	admin := redis.NewClient(opts)
	if err := admin.Ping(ctx).Err(); err != nil {
		admin.Close()
		t.Fatalf("redistest: cannot reach Redis at %s: %v\n"+
			"Tests need a real Redis. Start one with\n"+
			"    redis-server --save '' --appendonly no --port 6379 --daemonize yes\n"+
			"(apt-get install redis-server), or point TEST_REDIS_URL at one: redis://[:password@]host:port",
			u.Redacted(), err)
	}

	token := tokenFor(t)
	db, key := reserve(t, admin, token)

	dbOpts := *opts
	dbOpts.DB = db
	client := redis.NewClient(&dbOpts)
	if err := client.FlushDB(ctx).Err(); err != nil {
		releaseIfOurs.Run(ctx, admin, []string{key}, token)
		client.Close()
		admin.Close()
		t.Fatalf("redistest: flush database %d at %s (the server needs databases 1..15): %v", db, u.Redacted(), err)
	}

	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(renewEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopRenew:
				return
			case <-tick.C:
				renewIfOurs.Run(ctx, admin, []string{key}, token, reservationTTL.Milliseconds())
			}
		}
	}()

	u.Path = "/" + strconv.Itoa(db)
	reserved := u.String()
	reservedURLs.Store(t, reserved)
	t.Cleanup(func() {
		reservedURLs.Delete(t)
		close(stopRenew)
		<-renewed
		if err := client.FlushDB(ctx).Err(); err != nil {
			t.Errorf("redistest: flush database %d: %v", db, err)
		}
		client.Close()
		if err := releaseIfOurs.Run(ctx, admin, []string{key}, token).Err(); err != nil {
			t.Errorf("redistest: release database %d: %v", db, err)
		}
		admin.Close()
	})
	return reserved
}

// reserve claims the first free database, waiting for one while all are taken.
func reserve(t testing.TB, admin *redis.Client, token string) (int, string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(waitForFree)
	for {
		for db := firstDB; db <= lastDB; db++ {
			key := "fm:testdb:" + strconv.Itoa(db)
			ok, err := admin.SetNX(ctx, key, token, reservationTTL).Result()
			if err != nil {
				t.Fatalf("redistest: reserve database %d: %v", db, err)
			}
			if ok {
				return db, key
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: databases %d..%d stayed reserved for %s (keys fm:testdb:N in database 0); "+
				"run fewer tests at once (-p, -parallel) or delete stale keys", firstDB, lastDB, waitForFree)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tokenFor identifies the holder of a reservation, readable when debugging a stuck one.
func tokenFor(t testing.TB) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s pid=%d %s", t.Name(), os.Getpid(), hex.EncodeToString(b))
}
