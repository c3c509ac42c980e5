// Package graphtest is a GraphQL-over-websocket client for tests and benchmarks: it
// speaks graphql-transport-ws and the legacy graphql-ws, so both can be driven against
// a real server.
package graphtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// The two subprotocols.
const (
	TransportWS = "graphql-transport-ws"
	LegacyWS    = "graphql-ws"
)

// Message is one server message.
type Message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Result is one result of a subscription: data, or errors.
type Result struct {
	Data   map[string]any   `json:"data"`
	Errors []map[string]any `json:"errors"`
	// At is when it arrived.
	At time.Time `json:"-"`
}

// Conn is one websocket connection.
type Conn struct {
	ws       *websocket.Conn
	protocol string
	wmu      sync.Mutex

	mu     sync.Mutex
	subs   map[string]chan Result
	nextID int
	closed chan struct{}
	// Err is why the connection ended: a connection error, or the close frame.
	err error
	// KeepAlives counts the server's keep-alive messages (ka, ping).
	keepAlives int
}

// Options of Dial.
type Options struct {
	Protocol string
	// Header is sent with the upgrade (Authorization there, or nil).
	Header http.Header
	// InitPayload is connection_init's payload.
	InitPayload map[string]any
}

// Dial connects to url (ws://…/graphql), initialises the connection and waits for its
// acknowledgement. A refused connection_init returns the server's reason.
func Dial(ctx context.Context, url string, o Options) (*Conn, error) {
	d := websocket.Dialer{Subprotocols: []string{o.Protocol}, HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(ctx, url, o.Header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial: %w (status %d)", err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial: %w", err)
	}
	if ws.Subprotocol() != o.Protocol {
		ws.Close()
		return nil, fmt.Errorf("the server chose subprotocol %q", ws.Subprotocol())
	}
	c := &Conn{ws: ws, protocol: o.Protocol, subs: map[string]chan Result{}, closed: make(chan struct{})}
	if err := c.send(map[string]any{"type": "connection_init", "payload": o.InitPayload}); err != nil {
		ws.Close()
		return nil, err
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			ws.Close()
			return nil, fmt.Errorf("connection_init refused: %w", err)
		}
		switch m.Type {
		case "connection_ack":
			_ = ws.SetReadDeadline(time.Time{})
			go c.read()
			return c, nil
		case "ka", "ping", "pong":
		case "connection_error", "error":
			ws.Close()
			return nil, fmt.Errorf("connection_init refused: %s", m.Payload)
		default:
			ws.Close()
			return nil, fmt.Errorf("unexpected %s before connection_ack", m.Type)
		}
	}
}

func (c *Conn) send(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(v)
}

// Subscribe starts an operation; its results arrive on the channel, which is closed
// when the server completes it or the connection ends.
func (c *Conn) Subscribe(query string, vars map[string]any) (string, <-chan Result, error) {
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan Result, 1024)
	c.subs[id] = ch
	c.mu.Unlock()
	typ := "subscribe"
	if c.protocol == LegacyWS {
		typ = "start"
	}
	err := c.send(map[string]any{"id": id, "type": typ, "payload": map[string]any{"query": query, "variables": vars}})
	return id, ch, err
}

// Stop ends an operation.
func (c *Conn) Stop(id string) error {
	typ := "complete"
	if c.protocol == LegacyWS {
		typ = "stop"
	}
	return c.send(map[string]any{"id": id, "type": typ})
}

func (c *Conn) read() {
	defer func() {
		c.mu.Lock()
		for id, ch := range c.subs {
			close(ch)
			delete(c.subs, id)
		}
		c.mu.Unlock()
		close(c.closed)
	}()
	for {
		var m Message
		if err := c.ws.ReadJSON(&m); err != nil {
			c.mu.Lock()
			if c.err == nil {
				c.err = err
			}
			c.mu.Unlock()
			return
		}
		now := time.Now()
		switch m.Type {
		case "ka":
			c.count()
		case "ping":
			c.count()
			_ = c.send(map[string]any{"type": "pong"})
		case "next", "data":
			var r Result
			_ = json.Unmarshal(m.Payload, &r)
			r.At = now
			c.deliver(m.ID, r, false)
		case "error":
			var r Result
			if err := json.Unmarshal(m.Payload, &r.Errors); err != nil {
				var one map[string]any
				_ = json.Unmarshal(m.Payload, &one)
				r.Errors = []map[string]any{one}
			}
			r.At = now
			c.deliver(m.ID, r, true)
		case "complete":
			c.deliver(m.ID, Result{}, true)
		case "connection_error":
			c.mu.Lock()
			c.err = errors.New("connection_error: " + string(m.Payload))
			c.mu.Unlock()
		}
	}
}

func (c *Conn) count() {
	c.mu.Lock()
	c.keepAlives++
	c.mu.Unlock()
}

func (c *Conn) deliver(id string, r Result, end bool) {
	c.mu.Lock()
	ch := c.subs[id]
	if end {
		delete(c.subs, id)
	}
	c.mu.Unlock()
	if ch == nil {
		return
	}
	if r.Data != nil || r.Errors != nil {
		ch <- r
	}
	if end {
		close(ch)
	}
}

// KeepAlives is how many keep-alive messages the server sent.
func (c *Conn) KeepAlives() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keepAlives
}

// Done is closed when the connection ends; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err is why the connection ended.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Conn) Close() error { return c.ws.Close() }

// URL turns an http:// base URL into the ws:// URL of /graphql.
func URL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/graphql"
}
