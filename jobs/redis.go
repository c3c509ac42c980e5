package jobs

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// ParseRedisURL reads redis://[[user]:password@]host:port[/db] (rediss:// for TLS) into
// the connection options asynq needs and the go-redis options the rest of the process
// uses, so both talk to the same server and database. The error names what is wrong and
// never repeats the password.
func ParseRedisURL(rawURL string) (asynq.RedisConnOpt, *redis.Options, error) {
	if !strings.Contains(rawURL, "://") {
		return nil, nil, errors.New("redis URL: missing scheme; expected redis://[:password@]host:port/db or rediss:// (TLS)")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error repeats the URL, password included.
		return nil, nil, errors.New("redis URL is not a URL (a port that is not a number?); expected redis://[:password@]host:port/db")
	}
	shown := u.Redacted()
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, nil, fmt.Errorf("redis URL %s: scheme must be redis:// or rediss:// (TLS), not %q", shown, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, nil, fmt.Errorf("redis URL %s: missing host; expected %s://host:port/db", shown, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, nil, fmt.Errorf("redis URL %s: port %q is not a number from 1 to 65535", shown, p)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return nil, nil, fmt.Errorf("redis URL %s: database %q is not a number from 0 up", shown, db)
		}
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		// go-redis also reads query options (dial_timeout=..., pool_size=...).
		return nil, nil, fmt.Errorf("redis URL %s: %s", shown, strings.TrimPrefix(err.Error(), "redis: "))
	}
	return asynq.RedisClientOpt{
		Network:      opts.Network,
		Addr:         opts.Addr,
		Username:     opts.Username,
		Password:     opts.Password,
		DB:           opts.DB,
		DialTimeout:  opts.DialTimeout,
		ReadTimeout:  opts.ReadTimeout,
		WriteTimeout: opts.WriteTimeout,
		PoolSize:     opts.PoolSize,
		TLSConfig:    opts.TLSConfig,
	}, opts, nil
}

// EmbeddedRedis is an in-process Redis-protocol server (miniredis) on a loopback port:
// the zero-config default of a single `filemill serve`, so no Redis has to be installed.
// asynq's Lua scripts, its Inspector, task ids and the rate limiter all run on it.
//
// It keeps nothing across restarts: tasks queued when the process stops are lost with
// it. Nothing is lost for good, because the jobs themselves live in the database and the
// queued-job sweep re-enqueues queued jobs that have no task.
type EmbeddedRedis struct {
	m *miniredis.Miniredis
}

// StartEmbeddedRedis starts the server on a free 127.0.0.1 port.
func StartEmbeddedRedis() (*EmbeddedRedis, error) {
	m := miniredis.NewMiniRedis()
	// miniredis leaves TTLs frozen unless told otherwise; a long-lived server needs
	// them to run on the wall clock, or rate-limit buckets and locks would never expire.
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	return &EmbeddedRedis{m: m}, nil
}

// Addr is host:port of the listener.
func (e *EmbeddedRedis) Addr() string { return e.m.Addr() }

// URL is a redis:// URL of database 0, for ParseRedisURL.
func (e *EmbeddedRedis) URL() string {
	return "redis://" + net.JoinHostPort(e.m.Host(), e.m.Port()) + "/0"
}

// Close stops the server and drops everything it held.
func (e *EmbeddedRedis) Close() { e.m.Close() }
