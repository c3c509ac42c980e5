package rest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// shiftedClock is the system clock moved forward by a settable offset, so a test can
// let a day pass.
type shiftedClock struct{ offset atomic.Int64 }

func (c *shiftedClock) Now() time.Time {
	return time.Now().UTC().Add(time.Duration(c.offset.Load())).Truncate(time.Microsecond)
}

func (c *shiftedClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func TestSweeperExpiresAbandonedSessions(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			clock := &shiftedClock{}
			b := setup(t, setupOpts{backend: backend, clock: clock})
			ctx := context.Background()

			// A single PUT whose bytes landed but which was never completed: they are
			// staged, not yet the file's object.
			single := b.openUpload(b.liveA, "left.bin", 64, nil)
			require.Less(t, put(t, single["upload_url"].(string), single["upload_headers"].(map[string]any), randomBytes(64)).StatusCode, 300)
			singleKey := b.fileKey(single["file_id"].(string))
			_, err := b.blobs.Stat(ctx, singleKey)
			require.ErrorIs(t, err, domain.ErrNotFound)
			// One that never got its bytes.
			empty := b.openUpload(b.liveA, "never.bin", 64, nil)

			// A multipart session with one of its two parts stored.
			r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(),
				body: map[string]any{"filename": "half.bin", "byte_size": 17 << 20, "multipart": true}})
			require.Equal(t, 201, r.status, string(r.body))
			multi := r.json(t)
			p := multi["parts"].([]any)[0].(map[string]any)
			require.Less(t, put(t, p["url"].(string), nil, randomBytes(int(p["byte_size"].(float64)))).StatusCode, 300)

			// A session that completed is left alone.
			done := b.uploadFile(b.liveA, "kept.txt", []byte("kept after the sweep"), nil)
			require.Equal(t, 200, done.status)

			// Within the day nothing is swept.
			n, err := b.svc.Uploads.SweepExpired(ctx, 100)
			require.NoError(t, err)
			require.Zero(t, n)

			clock.advance(25 * time.Hour)
			n, err = b.svc.Uploads.SweepExpired(ctx, 100)
			require.NoError(t, err)
			require.Equal(t, 3, n)

			for _, u := range []map[string]any{single, multi, empty} {
				g := b.do(req{method: "GET", path: "/v1/uploads/" + u["id"].(string), key: b.liveA})
				require.Equal(t, 200, g.status, string(g.body))
				require.Equal(t, "expired", g.json(t)["state"])
				f := b.do(req{method: "GET", path: "/v1/files/" + u["file_id"].(string), key: b.liveA}).json(t)
				require.Equal(t, "expired", f["status"])
				h := b.do(req{method: "GET", path: "/v1/files/" + u["file_id"].(string) + "/history", key: b.liveA}).json(t)
				var types []string
				for _, e := range h["data"].([]any) {
					types = append(types, e.(map[string]any)["type"].(string))
				}
				require.Contains(t, types, "file.expired")
				// An expired session cannot be completed.
				c := b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.GreaterOrEqual(t, c.status, 400)
				require.Less(t, c.status, 500)
			}
			// The old URLs, still within their own lifetime (the storage keeps real time
			// here), write nothing: their session has ended.
			for _, u := range []map[string]any{single, empty} {
				st := put(t, u["upload_url"].(string), u["upload_headers"].(map[string]any), randomBytes(64)).StatusCode
				require.True(t, st >= 400 && st < 500, "PUT after expiry answered %d", st)
				_, err = b.blobs.Stat(ctx, b.fileKey(u["file_id"].(string)))
				require.ErrorIs(t, err, domain.ErrNotFound, "nothing written")
			}
			st := put(t, p["url"].(string), nil, randomBytes(int(p["byte_size"].(float64)))).StatusCode
			require.True(t, st >= 400 && st < 500, "part PUT after expiry answered %d", st)
			_, err = b.blobs.Stat(ctx, singleKey)
			require.ErrorIs(t, err, domain.ErrNotFound, "the abandoned bytes are discarded")
			kept := b.do(req{method: "GET", path: "/v1/files/" + done.json(t)["id"].(string), key: b.liveA}).json(t)
			require.Equal(t, "ready", kept["status"])

			// A second sweep finds nothing more.
			n, err = b.svc.Uploads.SweepExpired(ctx, 100)
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}
