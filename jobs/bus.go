package jobs

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/domain"
)

// The event stream: domain.EventBus in process (the embedded default) or over Redis
// pub/sub (every API process sees what any relay or worker published). Both also carry
// the outbox nudge: a signal, sent after every commit that wrote events, that wakes the
// relays at once rather than at their next poll.

// subscriptionBuffer is how many events a subscriber may fall behind before it loses
// the newest: a slow reader must not hold up the publisher or the other subscribers.
const subscriptionBuffer = 256

// hub fans events out to this process's subscribers by topic.
type hub struct {
	mu     sync.RWMutex
	topics map[string]map[*subscription]struct{}
	// first and last are told when a topic gains its first or loses its last
	// subscriber (the Redis bus subscribes and unsubscribes its channel then).
	first, last func(topic string)
}

type subscription struct {
	h      *hub
	topics []string
	ch     chan *domain.Event
	once   sync.Once
	stop   chan struct{}
}

func (s *subscription) Events() <-chan *domain.Event { return s.ch }

func (s *subscription) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.h.remove(s)
	})
}

func newHub() *hub { return &hub{topics: map[string]map[*subscription]struct{}{}} }

func (h *hub) subscribe(ctx context.Context, topics []string) *subscription {
	s := &subscription{h: h, topics: topics, ch: make(chan *domain.Event, subscriptionBuffer), stop: make(chan struct{})}
	h.mu.Lock()
	var fresh []string
	for _, t := range topics {
		subs := h.topics[t]
		if subs == nil {
			subs = map[*subscription]struct{}{}
			h.topics[t] = subs
			fresh = append(fresh, t)
		}
		subs[s] = struct{}{}
	}
	h.mu.Unlock()
	if h.first != nil {
		for _, t := range fresh {
			h.first(t)
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.stop:
		}
	}()
	return s
}

func (h *hub) remove(s *subscription) {
	h.mu.Lock()
	var gone []string
	for _, t := range s.topics {
		subs := h.topics[t]
		delete(subs, s)
		if len(subs) == 0 && subs != nil {
			delete(h.topics, t)
			gone = append(gone, t)
		}
	}
	// Under the lock, so deliver never sends on a closed channel.
	close(s.ch)
	h.mu.Unlock()
	if h.last != nil {
		for _, t := range gone {
			h.last(t)
		}
	}
}

// deliver hands e to the subscribers of topic without waiting; a subscriber whose
// buffer is full misses it. A subscriber of several of e's topics gets it once.
func (h *hub) deliver(topics []string, e *domain.Event) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var seen map[*subscription]bool
	for _, t := range topics {
		for s := range h.topics[t] {
			if len(topics) > 1 {
				if seen[s] {
					continue
				}
				if seen == nil {
					seen = map[*subscription]bool{}
				}
				seen[s] = true
			}
			select {
			case s.ch <- e:
			default:
			}
		}
	}
}

// nudger is a one-slot signal: many nudges before a wake-up are one wake-up.
type nudger chan struct{}

func (n nudger) nudge() {
	select {
	case n <- struct{}{}:
	default:
	}
}

// LocalBus is the in-process event bus and nudge of the embedded default.
type LocalBus struct {
	h      *hub
	nudges nudger
}

var _ domain.EventBus = (*LocalBus)(nil)

// NewLocalBus returns an in-process bus.
func NewLocalBus() *LocalBus { return &LocalBus{h: newHub(), nudges: make(nudger, 1)} }

// Publish hands e to this process's subscribers of its topics.
func (b *LocalBus) Publish(_ context.Context, e *domain.Event) error {
	b.h.deliver(domain.TopicsOf(e), e)
	return nil
}

// Subscribe subscribes to topics until ctx ends or the subscription is closed.
func (b *LocalBus) Subscribe(ctx context.Context, topics ...string) (domain.Subscription, error) {
	return b.h.subscribe(ctx, topics), nil
}

// Nudge wakes the relay.
func (b *LocalBus) Nudge() { b.nudges.nudge() }

// Nudges is where the relay waits for nudges.
func (b *LocalBus) Nudges() <-chan struct{} { return b.nudges }

// Redis channel names.
const (
	redisEventPrefix  = "filemill:events:"
	redisNudgeChannel = "filemill:outbox"
)

// wireEvent is an event as it travels over Redis: every field, the tenancy included.
type wireEvent struct {
	ID             string             `json:"id,omitempty"`
	Type           string             `json:"type"`
	OrganizationID string             `json:"organization_id"`
	ProjectID      string             `json:"project_id"`
	Environment    domain.Environment `json:"environment"`
	SubjectID      string             `json:"subject_id"`
	FileID         string             `json:"file_id,omitempty"`
	Data           json.RawMessage    `json:"data"`
	CreatedAt      time.Time          `json:"created_at"`
}

// RedisBus is the event bus over Redis pub/sub, shared by every process on one Redis.
// A process holds one pub/sub connection, subscribed to the channels its subscribers
// need, and fans messages out itself.
type RedisBus struct {
	rdb redis.UniversalClient
	log *slog.Logger
	h   *hub
	ps  *redis.PubSub

	pending nudger // nudges to publish
	nudges  nudger // nudges received
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	subOnce sync.Once
}

var _ domain.EventBus = (*RedisBus)(nil)

// NewRedisBus starts a bus on rdb; Close stops it.
func NewRedisBus(rdb redis.UniversalClient, log *slog.Logger) *RedisBus {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &RedisBus{rdb: rdb, log: log, h: newHub(), pending: make(nudger, 1), nudges: make(nudger, 1), ctx: ctx, cancel: cancel}
	b.ps = rdb.Subscribe(ctx)
	b.h.first = func(t string) {
		if err := b.ps.Subscribe(b.ctx, redisEventPrefix+t); err != nil && b.ctx.Err() == nil {
			b.log.Warn("event bus: subscribe", "topic", t, "error", err.Error())
		}
	}
	b.h.last = func(t string) {
		if err := b.ps.Unsubscribe(b.ctx, redisEventPrefix+t); err != nil && b.ctx.Err() == nil {
			b.log.Warn("event bus: unsubscribe", "topic", t, "error", err.Error())
		}
	}
	b.wg.Add(2)
	go b.receive()
	go b.publishNudges()
	return b
}

func (b *RedisBus) receive() {
	defer b.wg.Done()
	for msg := range b.ps.Channel(redis.WithChannelSize(1024)) {
		if msg.Channel == redisNudgeChannel {
			b.nudges.nudge()
			continue
		}
		topic, ok := strings.CutPrefix(msg.Channel, redisEventPrefix)
		if !ok {
			continue
		}
		var w wireEvent
		if err := json.Unmarshal([]byte(msg.Payload), &w); err != nil {
			continue
		}
		b.h.deliver([]string{topic}, &domain.Event{ID: w.ID, Object: "event", Type: w.Type, OrganizationID: w.OrganizationID,
			ProjectID: w.ProjectID, Environment: w.Environment, SubjectID: w.SubjectID, FileID: w.FileID, Data: w.Data,
			CreatedAt: w.CreatedAt})
	}
}

// Publish sends e to the channel of each of its topics, in one round trip.
func (b *RedisBus) Publish(ctx context.Context, e *domain.Event) error {
	payload, err := json.Marshal(wireEvent{ID: e.ID, Type: e.Type, OrganizationID: e.OrganizationID, ProjectID: e.ProjectID,
		Environment: e.Environment, SubjectID: e.SubjectID, FileID: e.FileID, Data: e.Data, CreatedAt: e.CreatedAt})
	if err != nil {
		return err
	}
	_, err = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, t := range domain.TopicsOf(e) {
			p.Publish(ctx, redisEventPrefix+t, payload)
		}
		return nil
	})
	return err
}

// Subscribe subscribes to topics until ctx ends or the subscription is closed.
func (b *RedisBus) Subscribe(ctx context.Context, topics ...string) (domain.Subscription, error) {
	return b.h.subscribe(ctx, topics), nil
}

// Nudge wakes the relays of every process. Nudges made while one is being sent are
// sent as one.
func (b *RedisBus) Nudge() { b.pending.nudge() }

func (b *RedisBus) publishNudges() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.pending:
		}
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		// A lost nudge costs at most the relay's poll interval.
		_ = b.rdb.Publish(ctx, redisNudgeChannel, "").Err()
		cancel()
	}
}

// Nudges is where a relay waits for nudges from any process.
func (b *RedisBus) Nudges() <-chan struct{} {
	b.subOnce.Do(func() {
		if err := b.ps.Subscribe(b.ctx, redisNudgeChannel); err != nil {
			b.log.Warn("event bus: subscribe to nudges", "error", err.Error())
		}
	})
	return b.nudges
}

// Close stops the bus; subscriptions end.
func (b *RedisBus) Close() error {
	b.cancel()
	err := b.ps.Close()
	b.wg.Wait()
	return err
}
