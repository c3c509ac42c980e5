package graph

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
)

// gorillaSockets accepts GraphQL websockets with gorilla/websocket, for gqlgen's
// websocket transport.
type gorillaSockets struct {
	upgrader websocket.Upgrader
}

var _ transport.WebsocketImplementation = (*gorillaSockets)(nil)

func newGorillaSockets() *gorillaSockets {
	return &gorillaSockets{upgrader: websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		// Keys travel in headers or connection_init, never in cookies, so a page of
		// another origin gains nothing a script of its own could not: any origin may
		// connect.
		CheckOrigin: func(*http.Request) bool { return true },
	}}
}

// Accept upgrades the request, offering the GraphQL subprotocols.
func (g *gorillaSockets) Accept(w http.ResponseWriter, r *http.Request, o transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	up := g.upgrader
	up.Subprotocols = o.Subprotocols
	conn, err := up.Upgrade(w, r, o.ResponseHeader)
	if err != nil {
		return nil, err
	}
	return &gorillaConn{conn: conn}, nil
}

// gorillaConn is one websocket. gorilla allows one writer at a time and the transport
// writes from several goroutines (messages, keep-alives): writes take a lock.
type gorillaConn struct {
	conn *websocket.Conn
	mu   sync.Mutex
}

var (
	_ transport.WebsocketReadLimiter   = (*gorillaConn)(nil)
	_ transport.WebsocketReadDeadliner = (*gorillaConn)(nil)
)

func (c *gorillaConn) Close() error { return c.conn.Close() }

// NextReader returns the next message; a peer's normal close is ErrWebsocketClosed.
func (c *gorillaConn) NextReader() (int, io.Reader, error) {
	t, r, err := c.conn.NextReader()
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
		return t, nil, transport.ErrWebsocketClosed
	}
	return t, r, err
}

func (c *gorillaConn) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.conn.WriteMessage(websocket.TextMessage, data)
}

// WriteClose sends a close frame and does not wait for the peer's.
func (c *gorillaConn) WriteClose(code int, message string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, message), time.Now().Add(5*time.Second))
	if errors.Is(err, websocket.ErrCloseSent) {
		return nil
	}
	return err
}

func (c *gorillaConn) Subprotocol() string               { return c.conn.Subprotocol() }
func (c *gorillaConn) SetReadLimit(limit int64)          { c.conn.SetReadLimit(limit) }
func (c *gorillaConn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }
