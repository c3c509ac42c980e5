package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/filemill/filemill/client/api"
)

// JobProgress is a job's state and progress (0–100) as WaitJob learns them.
type JobProgress struct {
	State    api.JobState
	Progress int
}

// WaitOption adjusts WaitJob.
type WaitOption func(*waitOptions)

type waitOptions struct {
	progress func(JobProgress)
	pollOnly bool
}

// OnProgress has WaitJob call fn whenever the job's state or progress changes (and once
// with where it stands at the start), one call at a time.
func OnProgress(fn func(JobProgress)) WaitOption {
	return func(o *waitOptions) { o.progress = fn }
}

// PollOnly has WaitJob poll the REST API instead of subscribing.
func PollOnly() WaitOption { return func(o *waitOptions) { o.pollOnly = true } }

// waitConfig is how WaitJob paces itself.
type waitConfig struct {
	// pollMin and pollMax bound the wait between two polls, which grows by half each time.
	pollMin, pollMax time.Duration
	// ping is how often the client pings an open subscription; a socket silent for
	// three of them is taken for dead.
	ping time.Duration
}

func defaultWaitConfig() waitConfig {
	return waitConfig{pollMin: 250 * time.Millisecond, pollMax: 5 * time.Second, ping: 15 * time.Second}
}

// WaitJob follows a job until it is terminal (succeeded, failed or cancelled) and
// answers it as GET /v1/jobs/{id} shows it then; a failed job is an answer, not an
// error (see its Error). It subscribes to the job's changes (the GraphQL jobUpdated
// subscription over a websocket, graphql-transport-ws) and, when websockets are
// refused on the way or the socket breaks, polls with growing waits instead. ctx
// bounds the wait.
func (c *Client) WaitJob(ctx context.Context, jobID string, opts ...WaitOption) (*api.Job, error) {
	var o waitOptions
	for _, fn := range opts {
		fn(&o)
	}
	r := &reporter{fn: o.progress}
	if !o.pollOnly {
		done, err := c.subscribeJob(ctx, jobID, r)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil && done {
			return c.GetJob(ctx, jobID)
		}
		// The socket was refused or broke, or the subscription ended early: polling
		// tells the rest (and answers a REST error, such as not_found, if there is one).
	}
	return c.pollJob(ctx, jobID, r)
}

// reporter calls the progress function on changes only.
type reporter struct {
	mu   sync.Mutex
	fn   func(JobProgress)
	last *JobProgress
}

func (r *reporter) report(p JobProgress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fn == nil || (r.last != nil && *r.last == p) {
		return
	}
	r.last = &p
	r.fn(p)
}

func (c *Client) pollJob(ctx context.Context, jobID string, r *reporter) (*api.Job, error) {
	wait := c.wait.pollMin
	for {
		job, err := c.GetJob(ctx, jobID)
		if err != nil {
			return nil, err
		}
		r.report(JobProgress{State: job.State, Progress: job.Progress})
		if terminal(job.State) {
			return job, nil
		}
		if err := sleep(ctx, wait/2+rand.N(wait/2+1)); err != nil {
			return nil, err
		}
		wait = min(wait*3/2, c.wait.pollMax)
	}
}

const jobUpdatedQuery = `subscription JobUpdated($id: ID!) { jobUpdated(id: $id) { id state progress } }`

// wsMessage is a message of graphql-transport-ws.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// subscribeJob follows the job over the jobUpdated subscription. done is true once the
// job was seen terminal; an error means the socket could not serve (refused upgrade,
// broken connection, a GraphQL error), and the caller polls instead.
func (c *Client) subscribeJob(ctx context.Context, jobID string, r *reporter) (done bool, err error) {
	err = c.subscribe(ctx, jobUpdatedQuery, map[string]any{"id": jobID}, func(data json.RawMessage) (bool, error) {
		var p struct {
			JobUpdated *struct {
				State    string `json:"state"`
				Progress int    `json:"progress"`
			} `json:"jobUpdated"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return false, err
		}
		if p.JobUpdated == nil {
			return false, errors.New("subscription: no jobUpdated in " + string(data))
		}
		// GraphQL spells the states as REST does.
		state := api.JobState(p.JobUpdated.State)
		r.report(JobProgress{State: state, Progress: p.JobUpdated.Progress})
		done = terminal(state)
		return done, nil
	})
	return done, err
}

// errSubscriptionEnded is a subscription the server completed.
var errSubscriptionEnded = errors.New("subscription: the server ended it")

// subscribe runs a GraphQL subscription over a websocket (graphql-transport-ws) and
// hands each result's data to next until next answers stop (then it answers nil), next
// fails, the socket breaks, the server ends the subscription (errSubscriptionEnded)
// or ctx is done.
func (c *Client) subscribe(ctx context.Context, query string, variables map[string]any, next func(data json.RawMessage) (stop bool, err error)) error {
	wsURL := "ws" + strings.TrimPrefix(c.baseURL, "http") + "/graphql"
	dialer := websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 10 * time.Second,
		Subprotocols: []string{"graphql-transport-ws"}}
	if t, ok := c.hc.Transport.(*http.Transport); ok {
		dialer.Proxy, dialer.TLSClientConfig = t.Proxy, t.TLSClientConfig
	}
	header := http.Header{"Authorization": {"Bearer " + c.apiKey}, "User-Agent": {c.userAgent}}
	conn, resp, err := dialer.DialContext(ctx, wsURL, header)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("websocket refused: %s", resp.Status)
		}
		return fmt.Errorf("websocket: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var wmu sync.Mutex
	send := func(m wsMessage) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return conn.WriteJSON(m)
	}
	auth, _ := json.Marshal(map[string]string{"authorization": "Bearer " + c.apiKey})
	if err := send(wsMessage{Type: "connection_init", Payload: auth}); err != nil {
		return err
	}
	// The client pings: a socket silent for three pings is dead (a proxy that dropped
	// it without a word), and the caller learns it.
	pingDone := make(chan struct{})
	defer close(pingDone)
	go func() {
		t := time.NewTicker(c.wait.ping)
		defer t.Stop()
		for {
			select {
			case <-pingDone:
				return
			case <-t.C:
				if send(wsMessage{Type: "ping"}) != nil {
					return
				}
			}
		}
	}()
	subscribed := false
	for {
		_ = conn.SetReadDeadline(time.Now().Add(3 * c.wait.ping))
		var m wsMessage
		if err := conn.ReadJSON(&m); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("websocket: %w", err)
		}
		switch m.Type {
		case "connection_ack":
			if subscribed {
				continue
			}
			vars, _ := json.Marshal(map[string]any{"query": query, "variables": variables})
			if err := send(wsMessage{ID: "1", Type: "subscribe", Payload: vars}); err != nil {
				return err
			}
			subscribed = true
		case "ping":
			if err := send(wsMessage{Type: "pong", Payload: m.Payload}); err != nil {
				return err
			}
		case "next":
			var p struct {
				Data   json.RawMessage   `json:"data"`
				Errors []json.RawMessage `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				return err
			}
			if len(p.Errors) > 0 || len(p.Data) == 0 || string(p.Data) == "null" {
				return errors.New("subscription: " + string(m.Payload))
			}
			done, err := next(p.Data)
			if err != nil {
				return err
			}
			if done {
				_ = send(wsMessage{ID: "1", Type: "complete"})
				_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
					time.Now().Add(time.Second))
				return nil
			}
		case "error":
			return errors.New("subscription: " + string(m.Payload))
		case "complete":
			return errSubscriptionEnded
		}
	}
}
