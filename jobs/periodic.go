package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/robfig/cron/v3"
)

// Periodic tasks are fired here rather than by asynq.Scheduler. The Scheduler fixes a
// task's options when it is registered, so every firing carries the same options; a
// Unique lock does not help either, since asynq drops it as soon as the task finishes.
// Neither stops several worker processes from each enqueuing the same sweep. Here every
// firing is aligned to its period and gets the task id "periodic:<type>:<unix second of
// the period>", kept for one period: each worker process fires, the first one to reach
// Redis enqueues, the others get a task id conflict.

// periodicEntry is one task registered with Periodic.
type periodicEntry struct {
	spec  string
	sched cron.Schedule
	task  *asynq.Task
	err   error // a bad spec, reported by Start
}

// Periodic registers task to be enqueued on a cron schedule: five fields (minute,
// hour, day of month, month, day of week, in UTC) or a descriptor such as "@hourly" or
// "@every 1m". "@every" periods are aligned to the clock (every minute on the minute),
// so all worker processes agree on them. A bad spec is reported by Start.
//
// The enqueued task goes to the sweep queue, served by workers of its own, and is
// retried by the next period, not by asynq: it gets MaxRetry(0), its period's task id
// and a retention of one period, overriding the task's own options of those kinds.
// Register before Start.
func (s *Server) Periodic(cronspec string, task *asynq.Task) {
	e := &periodicEntry{spec: cronspec, task: task}
	e.sched, e.err = cron.ParseStandard(cronspec)
	if e.err != nil {
		e.err = fmt.Errorf("periodic %s %q: %w", task.Type(), cronspec, e.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.periodic = append(s.periodic, e)
}

// next returns the first firing strictly after t.
func (e *periodicEntry) next(t time.Time) time.Time {
	t = t.UTC()
	if every, ok := e.sched.(cron.ConstantDelaySchedule); ok {
		// cron would count from when this process started; align to the clock instead.
		return t.Truncate(every.Delay).Add(every.Delay)
	}
	return e.sched.Next(t)
}

func (s *Server) runPeriodic(ctx context.Context, e *periodicEntry) {
	for {
		at := e.next(time.Now())
		timer := time.NewTimer(time.Until(at))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		s.enqueuePeriodic(ctx, e, at)
	}
}

func (s *Server) enqueuePeriodic(ctx context.Context, e *periodicEntry, at time.Time) {
	period := e.next(at).Sub(at)
	id := "periodic:" + e.task.Type() + ":" + strconv.FormatInt(at.Unix(), 10)
	enqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.client.EnqueueContext(enqCtx, e.task,
		asynq.TaskID(id), asynq.Queue(SweepQueueName), asynq.MaxRetry(0), asynq.Retention(period))
	switch {
	case err == nil:
		s.log.Debug("periodic task enqueued", "task_type", e.task.Type(), "task_id", id)
	case errors.Is(err, asynq.ErrTaskIDConflict):
		// Another worker process enqueued this period's task first.
	case ctx.Err() != nil:
		// Shutting down.
	default:
		s.repeated.Log(ctx, slog.LevelWarn, "periodic:"+e.task.Type(), "periodic task not enqueued",
			"task_type", e.task.Type(), "task_id", id, "error", err.Error())
	}
}

// localEntry is housekeeping of this process's own host, run by every worker process.
type localEntry struct {
	every time.Duration
	run   func(ctx context.Context)
}

// Locally registers run to be called at Start and every period after, in this process
// only: for what belongs to the host rather than to the cluster (its scratch space).
// Register before Start.
func (s *Server) Locally(every time.Duration, run func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.local = append(s.local, &localEntry{every: every, run: run})
}

func (s *Server) runLocally(ctx context.Context, e *localEntry) {
	tick := time.NewTicker(e.every)
	defer tick.Stop()
	for {
		e.run(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
