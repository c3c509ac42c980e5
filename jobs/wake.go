package jobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// wakeChannel is the Redis channel on which an enqueue names the queue it filled. asynq
// only polls: an idle worker would see a new task at its next look, on average half a
// poll interval later. A worker listening here looks at once instead.
const wakeChannel = "filemill:queued"

// publishQueued tells the workers of queue that it holds a new task. Best effort: a
// lost message only leaves the task to the next poll.
func publishQueued(ctx context.Context, rdb redis.UniversalClient, queue string) {
	_ = rdb.Publish(context.WithoutCancel(ctx), wakeChannel, queue).Err()
}

// waker turns asynq's idle polling into waiting for a wake-up. asynq's processor
// runs its dequeue script on each of a server's queues in turn, and sleeps for the
// poll interval when all are empty. waker is a hook on the connection the asynq
// servers share: when a server's every queue has come back empty, the last dequeue
// waits (up to the server's poll interval) for a task to be published on one of its
// queues, then looks again. asynq's own sleep is then kept short; the poll interval
// becomes the longest a task waits when its wake-up is lost (a retry moved back by
// asynq, a dropped subscription).
type waker struct {
	byQueue map[string]*idleQueues
	stop    chan struct{}
	once    sync.Once
}

// wakeSleep is asynq's own sleep after a look that found nothing; a wake-up for a
// queue other than the last one looked at is served after it.
const wakeSleep = time.Millisecond

func newWaker() *waker { return &waker{byQueue: map[string]*idleQueues{}, stop: make(chan struct{})} }

// serve registers the queues of one asynq server, which waits up to hold; it returns
// false (the server polls as before) when a queue is another server's already.
func (w *waker) serve(queues map[string]int, hold time.Duration) bool {
	for q := range queues {
		if w.byQueue[q] != nil {
			return false
		}
	}
	iq := &idleQueues{queues: len(queues), hold: hold, empty: map[string]bool{}, woken: make(chan struct{})}
	for q := range queues {
		w.byQueue[q] = iq
	}
	return true
}

// subscribe subscribes to the wake-ups, waiting up to a few seconds for Redis to
// confirm, so that no enqueue after the workers start goes unheard. A Redis that does
// not answer yet is subscribed to later (go-redis tries again).
func (w *waker) subscribe(ctx context.Context, rdb redis.UniversalClient) *redis.PubSub {
	ps := rdb.Subscribe(ctx, wakeChannel)
	confirm, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, _ = ps.Receive(confirm)
	return ps
}

// listen delivers wake-ups from ps until ctx ends, then closes ps; go-redis subscribes
// again after a lost connection.
func (w *waker) listen(ctx context.Context, ps *redis.PubSub) {
	defer ps.Close()
	msgs := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			if iq := w.byQueue[m.Payload]; iq != nil {
				iq.wake()
			}
		}
	}
}

// close ends every wait, for shutdown.
func (w *waker) close() { w.once.Do(func() { close(w.stop) }) }

func (w *waker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *waker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (w *waker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			return next(ctx, cmd)
		}
		queue := dequeuedQueue(c)
		iq := w.byQueue[queue]
		if iq == nil {
			return next(ctx, cmd)
		}
		gen := iq.generation()
		err := next(ctx, cmd)
		if !errors.Is(err, redis.Nil) {
			iq.found()
			return err
		}
		round, all := iq.allEmpty(queue, gen)
		if !all || !iq.wait(round, w.stop) {
			return err
		}
		again := redis.NewCmd(ctx, c.Args()...)
		again.SetFirstKeyPos(3)
		err = next(ctx, again)
		c.SetVal(again.Val())
		c.SetErr(again.Err())
		if !errors.Is(err, redis.Nil) {
			iq.found()
		}
		return err
	}
}

// dequeuedQueue is the queue an asynq dequeue script runs on, or "" for any other
// command. The script takes four keys: the queue's pending, paused, active and lease.
func dequeuedQueue(c *redis.Cmd) string {
	if name := c.Name(); name != "evalsha" && name != "eval" {
		return ""
	}
	args := c.Args()
	if len(args) < 7 {
		return ""
	}
	if n, ok := args[2].(int); !ok || n != 4 {
		return ""
	}
	var keys [4]string
	for i := range keys {
		k, ok := args[3+i].(string)
		if !ok {
			return ""
		}
		keys[i] = k
	}
	q, ok := strings.CutPrefix(keys[0], "asynq:{")
	if !ok {
		return ""
	}
	if q, ok = strings.CutSuffix(q, "}:pending"); !ok {
		return ""
	}
	prefix := "asynq:{" + q + "}:"
	if keys[1] != prefix+"paused" || keys[2] != prefix+"active" || keys[3] != prefix+"lease" {
		return ""
	}
	return q
}

// idleQueues is the wake-up state of one asynq server's queues. Only that server's
// processor dequeues from them, one look at a time.
type idleQueues struct {
	queues int
	hold   time.Duration

	mu       sync.Mutex
	gen      uint64
	woken    chan struct{}   // closed at the next wake-up
	empty    map[string]bool // queues found empty since a task was last found
	roundGen uint64          // the generation when the first of them was looked at
}

func (iq *idleQueues) generation() uint64 {
	iq.mu.Lock()
	defer iq.mu.Unlock()
	return iq.gen
}

func (iq *idleQueues) wake() {
	iq.mu.Lock()
	defer iq.mu.Unlock()
	iq.gen++
	close(iq.woken)
	iq.woken = make(chan struct{})
}

func (iq *idleQueues) found() {
	iq.mu.Lock()
	defer iq.mu.Unlock()
	clear(iq.empty)
}

// allEmpty records queue as found empty (looked at since generation gen) and reports
// whether every queue has been, with the generation the round of looks began at: a
// wake-up for a queue looked at earlier in the round must not be missed.
func (iq *idleQueues) allEmpty(queue string, gen uint64) (uint64, bool) {
	iq.mu.Lock()
	defer iq.mu.Unlock()
	if len(iq.empty) == 0 {
		iq.roundGen = gen
	}
	iq.empty[queue] = true
	return iq.roundGen, len(iq.empty) >= iq.queues
}

// wait returns true at a wake-up after generation gen (at once if one came already),
// false when hold runs out or stop closes. Either way the next round of looks starts
// afresh.
func (iq *idleQueues) wait(gen uint64, stop <-chan struct{}) bool {
	iq.mu.Lock()
	clear(iq.empty)
	if iq.gen != gen {
		iq.mu.Unlock()
		return true
	}
	woken := iq.woken
	iq.mu.Unlock()
	t := time.NewTimer(iq.hold)
	defer t.Stop()
	select {
	case <-woken:
		return true
	case <-t.C:
		return false
	case <-stop:
		return false
	}
}
