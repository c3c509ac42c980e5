package graph_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/graph/graphtest"
)

var protocols = []string{graphtest.TransportWS, graphtest.LegacyWS}

func (b *bundle) dial(protocol string, header http.Header, init map[string]any) (*graphtest.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := graphtest.Dial(ctx, graphtest.URL(b.srv.URL), graphtest.Options{Protocol: protocol, Header: header, InitPayload: init})
	if err == nil {
		b.t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// next waits for a subscription's next result, within a generous bound.
func next(t *testing.T, ch <-chan graphtest.Result) (graphtest.Result, bool) {
	t.Helper()
	select {
	case r, ok := <-ch:
		return r, ok
	case <-time.After(30 * time.Second):
		t.Fatal("no result within 30 s")
		return graphtest.Result{}, false
	}
}

func TestWebsocketAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) { c.KeepAlive = time.Second; c.KeyRecheck = 200 * time.Millisecond }})
	const viewer = `query { viewer { apiKey { id } } }`
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			for name, o := range map[string]struct {
				header http.Header
				init   map[string]any
			}{
				"UpgradeHeader":      {header: http.Header{"Authorization": {"Bearer " + b.liveA}}},
				"InitPayload":        {init: map[string]any{"authorization": "Bearer " + b.liveA}},
				"InitPayloadCapital": {init: map[string]any{"Authorization": "bearer " + b.liveA}},
			} {
				t.Run(name, func(t *testing.T) {
					c, err := b.dial(proto, o.header, o.init)
					require.NoError(t, err)
					_, ch, err := c.Subscribe(viewer, nil)
					require.NoError(t, err)
					r, ok := next(t, ch)
					require.True(t, ok)
					require.Empty(t, r.Errors)
					require.Equal(t, b.orgA.LiveKey.ID, r.Data["viewer"].(map[string]any)["apiKey"].(map[string]any)["id"])
				})
			}
			for name, init := range map[string]map[string]any{
				"NoKey":      nil,
				"BadKey":     {"authorization": "Bearer fm_live_abcdefghijklmnopqrstuvwxyz234567"},
				"NotBearer":  {"authorization": b.liveA},
				"WrongOrgID": {"authorization": "Bearer nope"},
			} {
				t.Run(name, func(t *testing.T) {
					_, err := b.dial(proto, nil, init)
					require.Error(t, err, "a connection without a valid key gets nothing")
				})
			}
			t.Run("BadHeaderRefusedAtUpgrade", func(t *testing.T) {
				_, err := b.dial(proto, http.Header{"Authorization": {"Bearer fm_live_abcdefghijklmnopqrstuvwxyz234567"}}, nil)
				require.ErrorContains(t, err, "401")
			})
			t.Run("AuthorizationBeforeSubscription", func(t *testing.T) {
				st, f := b.rest("POST", "/v1/uploads", b.liveA, map[string]any{"filename": "x.bin", "byte_size": 10})
				require.Equal(t, 201, st)
				c, err := b.dial(proto, nil, map[string]any{"authorization": "Bearer " + b.keyB})
				require.NoError(t, err)
				_, ch, err := c.Subscribe(`subscription($id: ID!) { fileUpdated(id: $id) { id status } }`, map[string]any{"id": f["file_id"]})
				require.NoError(t, err)
				r, ok := next(t, ch)
				require.True(t, ok)
				require.Nil(t, r.Data["fileUpdated"])
				require.Equal(t, domain.CodeNotFound, r.Errors[0]["extensions"].(map[string]any)["code"])
			})
			t.Run("KeepAlives", func(t *testing.T) {
				c, err := b.dial(proto, nil, map[string]any{"authorization": "Bearer " + b.liveA})
				require.NoError(t, err)
				eventually.True(t, "the condition to hold", func() bool { return c.KeepAlives() >= 2 })
			})
			t.Run("RevokedKeyEndsTheConnection", func(t *testing.T) {
				key := b.key(nil)
				c, err := b.dial(proto, nil, map[string]any{"authorization": "Bearer " + key})
				require.NoError(t, err)
				require.NoError(t, b.svc.Keys.RevokeKey(context.Background(), keyID(t, b, key)))
				select {
				case <-c.Done():
				case <-time.After(30 * time.Second):
					t.Fatal("the connection outlived its key by 30 s")
				}
			})
		})
	}
}
