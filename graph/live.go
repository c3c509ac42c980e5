package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// Subscriptions: each authorizes its subject as the query of it would, subscribes to
// the event stream, then reads the subject: what it sends first is the state now, and
// nothing committed after that read is missed. Events older than what was sent are
// skipped; a subject that reaches its end state ends the subscription.

// EventStream is the live event stream subscriptions read (the domain's bus): every
// committed state change and running jobs' progress, whichever process made them.
type EventStream = domain.EventBus

// liveConn is what one websocket connection holds: how many subscriptions it runs, and
// the means to end it when its credential stops being valid.
type liveConn struct {
	active atomic.Int64
	end    context.CancelFunc
}

type liveConnKey struct{}

func connFrom(ctx context.Context) *liveConn {
	c, _ := ctx.Value(liveConnKey{}).(*liveConn)
	return c
}

// liveLimits counts the subscriptions of each key in this process.
type liveLimits struct {
	perConn, perKey int
	mu              sync.Mutex
	byKey           map[string]int
}

// acquire takes a subscription place on the connection and for the key; release gives
// it back. Codes: rate_limited.
func (l *liveLimits) acquire(ctx context.Context, p *domain.Principal) (release func(), err error) {
	c := connFrom(ctx)
	if c != nil && c.active.Add(1) > int64(l.perConn) {
		c.active.Add(-1)
		return nil, &domain.Error{Code: domain.CodeRateLimited, RetryAfter: 1,
			Message: fmt.Sprintf("a connection may run at most %d subscriptions at once", l.perConn)}
	}
	l.mu.Lock()
	if l.byKey[p.Key.ID] >= l.perKey {
		l.mu.Unlock()
		if c != nil {
			c.active.Add(-1)
		}
		return nil, &domain.Error{Code: domain.CodeRateLimited, RetryAfter: 1,
			Message: fmt.Sprintf("a key may run at most %d subscriptions at once on this server", l.perKey)}
	}
	l.byKey[p.Key.ID]++
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			if l.byKey[p.Key.ID]--; l.byKey[p.Key.ID] <= 0 {
				delete(l.byKey, p.Key.ID)
			}
			l.mu.Unlock()
			if c != nil {
				c.active.Add(-1)
			}
		})
	}, nil
}

// initSocket authenticates a websocket connection: by its upgrade's credential (already
// checked by the door), or by connection_init's payload — {"authorization": "Bearer
// <key>"} (either case of the name), or the console's {"csrfToken"} beside the session
// cookie of an upgrade from the console's own origin (door.Sessions). It then checks the credential again every KeyRecheck, and
// ends the connection when it no longer holds.
func (s *Server) initSocket(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	ctx, err := s.door.AuthenticateInit(ctx, payload)
	if err != nil {
		derr := domain.AsError(err)
		if derr == nil {
			door.Logger(ctx).Error("authenticate websocket", "error", err.Error())
			derr = &domain.Error{Code: domain.CodeInternal, Message: "internal error"}
		}
		return transport.WithWebsocketCloseCode(ctx, 4403), nil, fmt.Errorf("%s: %s", derr.Code, derr.Message)
	}
	ctx, end := context.WithCancel(ctx)
	c := &liveConn{end: end}
	ctx = context.WithValue(ctx, liveConnKey{}, c)
	reason := "the API key is no longer valid"
	if p := principal(ctx); p != nil && p.Session != nil {
		reason = "the session ended"
	}
	ctx = transport.AppendCloseReason(ctx, reason)
	go s.watchCredential(ctx, door.IdentityOf(ctx), c)
	return ctx, nil, nil
}

// watchCredential ends a connection whose credential stopped holding (a key revoked or
// expired, its organization suspended): its subscriptions end with it. A check that
// could not be made (a dependency down) ends nothing.
func (s *Server) watchCredential(ctx context.Context, id *door.Identity, c *liveConn) {
	t := time.NewTicker(s.cfg.KeyRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := id.Recheck(ctx); err != nil && domain.AsError(err) != nil {
				c.end()
				return
			}
		}
	}
}

// stream runs one subscription: it subscribes to topics, reads the subject (first, when
// there is one), and then passes on what each event makes of it (next) until done says
// it is over or the client leaves. next returns nil for an event that changes nothing it
// shows.
func stream[V any](ctx context.Context, r *Resolver, topics []string, first func(context.Context) (V, error),
	next func(context.Context, *domain.Event, V) (*V, error), refresh func(context.Context, V) (*V, error),
	done func(V) bool) (<-chan V, error) {
	p := principal(ctx)
	release, err := r.live.acquire(ctx, p)
	if err != nil {
		return nil, err
	}
	if r.bus == nil {
		release()
		return nil, domain.Errorf(domain.CodeNotImplemented, "subscriptions are not available on this deployment")
	}
	sub, err := r.bus.Subscribe(ctx, topics...)
	if err != nil {
		release()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	var cur V
	if first != nil {
		if cur, err = first(ctx); err != nil {
			sub.Close()
			release()
			return nil, err
		}
	}
	out := make(chan V, 1)
	go func() {
		defer close(out)
		defer release()
		defer sub.Close()
		send := func(v V) bool {
			select {
			case out <- v:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if first != nil && (!send(cur) || done(cur)) {
			return
		}
		// The stream is best effort (a relay that died, a lost connection to Redis): the
		// subject is read again now and then, so a change the stream lost still arrives.
		var resync <-chan time.Time
		if refresh != nil && r.resync > 0 {
			t := time.NewTicker(r.resync)
			defer t.Stop()
			resync = t.C
		}
		for {
			var v *V
			var err error
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.Events():
				if !ok {
					return
				}
				v, err = next(ctx, e, cur)
			case <-resync:
				v, err = refresh(ctx, cur)
				if err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
					r.log.Warn("subscription could not read its subject again", "error", err.Error())
					continue
				}
			}
			if err != nil {
				r.log.Warn("subscription ends", "error", err.Error())
				return
			}
			if v == nil {
				continue
			}
			cur = *v
			if !send(cur) || done(cur) {
				return
			}
		}
	}()
	return out, nil
}

// objectOf decodes the subject of an event, data.object.
func objectOf[V any](e *domain.Event) (V, bool) {
	var d struct {
		Object V `json:"object"`
	}
	err := json.Unmarshal(e.Data, &d)
	return d.Object, err == nil
}

var jobStateRank = map[string]int{domain.JobQueued: 0, domain.JobRunning: 1, domain.JobSucceeded: 2, domain.JobFailed: 2, domain.JobCancelled: 2}

// jobAfter reports whether b is a later state of a job than a: a later attempt, a later
// state, or more progress.
func jobAfter(b, a *domain.JobView) bool {
	if b.Attempts != a.Attempts {
		return b.Attempts > a.Attempts
	}
	if rb, ra := jobStateRank[b.State], jobStateRank[a.State]; rb != ra {
		return rb > ra
	}
	return b.Progress > a.Progress
}

var fileStatusRank = map[string]int{domain.FileAwaitingUpload: 0, domain.FileReady: 1, domain.FileRejected: 1,
	domain.FileDeleted: 2, domain.FileExpired: 2}

func fileDone(f *domain.FileView) bool { return fileStatusRank[f.Status] == 2 }

// fileAfter reports whether b is a later status of a file than a.
func fileAfter(b, a *domain.FileView) bool {
	return fileStatusRank[b.Status] > fileStatusRank[a.Status]
}

// subscribeJob: the job now, then each later state of it.
func (r *Resolver) subscribeJob(ctx context.Context, id string) (<-chan *domain.JobView, error) {
	p := principal(ctx)
	if _, err := r.svc.Jobs.FindJob(ctx, p, id); err != nil {
		return nil, err
	}
	return stream(ctx, r, []string{id}, func(ctx context.Context) (*domain.JobView, error) {
		j, err := r.svc.Jobs.FindJob(ctx, p, id)
		if err != nil {
			return nil, err
		}
		return ptr(j.View()), nil
	}, func(_ context.Context, e *domain.Event, cur *domain.JobView) (**domain.JobView, error) {
		if !strings.HasPrefix(e.Type, "job.") {
			return nil, nil
		}
		v, ok := objectOf[domain.JobView](e)
		if !ok || v.ID != id || !jobAfter(&v, cur) {
			return nil, nil
		}
		return ptr(&v), nil
	}, func(ctx context.Context, cur *domain.JobView) (**domain.JobView, error) {
		j, err := r.svc.Jobs.FindJob(ctx, p, id)
		if err != nil {
			return nil, err
		}
		if v := j.View(); jobAfter(&v, cur) {
			return ptr(&v), nil
		}
		return nil, nil
	}, func(v *domain.JobView) bool { return jobStateRank[v.State] == 2 })
}

// subscribeFile: the file now, then each later status of it.
func (r *Resolver) subscribeFile(ctx context.Context, id string) (<-chan *domain.FileView, error) {
	p := principal(ctx)
	if _, err := r.svc.Files.GetFileWithoutArtifacts(ctx, p, id); err != nil {
		return nil, err
	}
	return stream(ctx, r, []string{id}, func(ctx context.Context) (*domain.FileView, error) {
		f, err := r.svc.Files.GetFileWithoutArtifacts(ctx, p, id)
		if err != nil {
			return nil, err
		}
		return ptr(f.View()), nil
	}, func(_ context.Context, e *domain.Event, cur *domain.FileView) (**domain.FileView, error) {
		if !strings.HasPrefix(e.Type, "file.") {
			return nil, nil
		}
		v, ok := objectOf[domain.FileView](e)
		if !ok || v.ID != id || !fileAfter(&v, cur) {
			return nil, nil
		}
		return ptr(&v), nil
	}, func(ctx context.Context, cur *domain.FileView) (**domain.FileView, error) {
		f, err := r.svc.Files.GetFileWithoutArtifacts(ctx, p, id)
		if domain.ErrorCode(err) == domain.CodeNotFound {
			// Deleted meanwhile, and the stream lost it: that is its end.
			gone := *cur
			gone.Status = domain.FileDeleted
			return ptr(&gone), nil
		}
		if err != nil {
			return nil, err
		}
		if v := f.View(); fileAfter(&v, cur) {
			return ptr(&v), nil
		}
		return nil, nil
	}, fileDone)
}

// subscribeBatch: the batch now, then the batch again whenever one of its members
// moves.
func (r *Resolver) subscribeBatch(ctx context.Context, id string) (<-chan *domain.BatchView, error) {
	p := principal(ctx)
	if _, _, err := r.svc.Jobs.FindBatch(ctx, p, id); err != nil {
		return nil, err
	}
	read := func(ctx context.Context) (*domain.BatchView, error) {
		b, jobs, err := r.svc.Jobs.FindBatch(ctx, p, id)
		if err != nil {
			return nil, err
		}
		return ptr(b.View(jobs)), nil
	}
	changed := func(ctx context.Context, cur *domain.BatchView) (**domain.BatchView, error) {
		v, err := read(ctx)
		if err != nil || batchSame(v, cur) {
			return nil, err
		}
		return ptr(v), nil
	}
	return stream(ctx, r, []string{id}, read, func(ctx context.Context, e *domain.Event, cur *domain.BatchView) (**domain.BatchView, error) {
		if !strings.HasPrefix(e.Type, "job.") || e.Type == domain.EventJobProgress {
			return nil, nil
		}
		return changed(ctx, cur)
	}, func(ctx context.Context, cur *domain.BatchView) (**domain.BatchView, error) {
		return changed(ctx, cur)
	}, func(v *domain.BatchView) bool { return v.State == "completed" })
}

func batchSame(a, b *domain.BatchView) bool {
	if a.State != b.State || a.CreditsCharged != b.CreditsCharged || len(a.Counts) != len(b.Counts) {
		return false
	}
	for k, n := range a.Counts {
		if b.Counts[k] != n {
			return false
		}
	}
	return true
}

// subscribeEvents: a project's events of the types asked for, as they happen.
func (r *Resolver) subscribeEvents(ctx context.Context, projectID string, types []string) (<-chan *domain.EventView, error) {
	p := principal(ctx)
	topic, types, err := r.svc.Webhooks.AuthorizeEventStream(ctx, p, projectID, types)
	if err != nil {
		return nil, err
	}
	return stream(ctx, r, []string{topic}, nil, func(_ context.Context, e *domain.Event, _ *domain.EventView) (**domain.EventView, error) {
		if !slices.Contains(types, e.Type) {
			return nil, nil
		}
		return ptr(ptr(e.View())), nil
	}, nil, func(*domain.EventView) bool { return false })
}
