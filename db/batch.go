package db

import (
	"context"
	"sync"
	"time"
)

// batcher writes items that arrive while a write of their kind is under way together,
// in the next write: group commit. Each write costs a statement, a round trip and a
// commit whatever it carries, and writes that lock the same row run one at a time, one
// disk flush each; a batch pays for all its items once. The first item of an idle key
// starts a writer, which takes whatever waits until nothing does; a lone item is written
// at once, so batching adds no wait when there is no load.
type batcher[T any] struct {
	// write writes a batch and records each item's outcome in the item.
	write func(ctx context.Context, batch []T)
	// weight and maxWeight bound a batch (an item heavier than maxWeight goes alone).
	weight    func(T) int
	maxWeight int

	mu      sync.Mutex
	waiting map[string][]*batched[T] // by key; present while its writer runs
}

type batched[T any] struct {
	item T
	done chan struct{}
}

// pending is an item waiting in a batcher, and then its outcome.
type pending[T any] struct {
	item T
	err  error
}

// writeOrEach writes a batch's items at once; when refused reports that write refused
// because of one member, it writes them one by one, so each gets its own answer. Any
// other failure (the database unreachable, a timeout) is every member's: trying each
// alone would only repeat it.
func writeOrEach[T any](ctx context.Context, write func(context.Context, []T) error, batch []*pending[T], refused func(error) bool) {
	items := make([]T, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	err := write(ctx, items)
	if len(batch) > 1 && refused(err) {
		for _, p := range batch {
			p.err = write(ctx, []T{p.item})
		}
		return
	}
	for _, p := range batch {
		p.err = err
	}
}

// batchWriteTimeout bounds one write: it serves several callers, so none of their
// contexts can cancel it.
const batchWriteTimeout = 30 * time.Second

func newBatcher[T any](write func(context.Context, []T), weight func(T) int, maxWeight int) *batcher[T] {
	return &batcher[T]{write: write, weight: weight, maxWeight: maxWeight, waiting: map[string][]*batched[T]{}}
}

// do queues item under key and waits for its write. Once queued it is written whatever
// becomes of ctx: the caller learns the outcome either way.
func (b *batcher[T]) do(ctx context.Context, key string, item T) {
	p := &batched[T]{item: item, done: make(chan struct{})}
	b.mu.Lock()
	waiting, busy := b.waiting[key]
	b.waiting[key] = append(waiting, p)
	b.mu.Unlock()
	if !busy {
		go b.drain(context.WithoutCancel(ctx), key)
	}
	<-p.done
}

// drain writes what waits under key until nothing does.
func (b *batcher[T]) drain(ctx context.Context, key string) {
	for {
		b.mu.Lock()
		waiting := b.waiting[key]
		if len(waiting) == 0 {
			delete(b.waiting, key)
			b.mu.Unlock()
			return
		}
		n, weight := 0, 0
		for n < len(waiting) && (n == 0 || weight+b.weight(waiting[n].item) <= b.maxWeight) {
			weight += b.weight(waiting[n].item)
			n++
		}
		group := waiting[:n:n]
		b.waiting[key] = waiting[n:]
		b.mu.Unlock()

		items := make([]T, len(group))
		for i, p := range group {
			items[i] = p.item
		}
		wctx, cancel := context.WithTimeout(ctx, batchWriteTimeout)
		b.write(wctx, items)
		cancel()
		for _, p := range group {
			close(p.done)
		}
	}
}
