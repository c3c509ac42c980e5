package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"

	"github.com/filemill/filemill/domain"
)

// Task types.
const (
	// TypeJobRun runs one job (an operation or a preset on a file).
	TypeJobRun = "job:run"
	// TypeSweepJobs re-drives jobs that lost their way to a worker: queued or running
	// jobs whose task went missing or was archived, running jobs whose lease ran out.
	TypeSweepJobs = "sweep:jobs"
	// TypeSweepUploads expires upload sessions past their deadline.
	TypeSweepUploads = "sweep:uploads"
	// TypeSweepIdempotency deletes expired idempotency records.
	TypeSweepIdempotency = "sweep:idempotency"
	// TypeSweepPeople deletes the console's sessions, invitations, set-password links and
	// sign-in counts that ended a while ago.
	TypeSweepPeople = "sweep:people"
	// TypeSweepLegacyArtifacts removes, once, what attempts stored and never recorded
	// under the artifact layout before artifacts were stored under their job.
	TypeSweepLegacyArtifacts = "sweep:legacy_artifacts"
)

// DefaultQueueName is the asynq queue jobs go to.
const DefaultQueueName = "default"

// asynqQueuesKey is the Redis set in which asynq registers its queues.
const asynqQueuesKey = "asynq:queues"

// SweepQueueName is the queue of the periodic sweeps. A worker serves it apart from the
// job queues, with workers of its own, so a sweep never waits behind a backlog of jobs or
// for a job to free a worker.
const SweepQueueName = "sweeps"

// JobRunPayload is the payload of a TypeJobRun task.
type JobRunPayload struct {
	JobID string `json:"job_id"`
}

// NewJobRunTask returns the task that runs a job. Its task id is the job id, so the
// same job can never be queued twice, whoever enqueues it.
func NewJobRunTask(jobID string) *asynq.Task { return newJobRunTask(context.Background(), jobID) }

// newJobRunTask is NewJobRunTask carrying ctx's span as a W3C traceparent in the task's
// headers (none when tracing is off), so the attempt that runs it can link to it.
func newJobRunTask(ctx context.Context, jobID string) *asynq.Task {
	// Marshalling a struct of one string cannot fail.
	payload, _ := json.Marshal(JobRunPayload{JobID: jobID})
	headers := map[string]string{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(headers))
	if len(headers) == 0 {
		return asynq.NewTask(TypeJobRun, payload, asynq.TaskID(jobID))
	}
	return asynq.NewTaskWithHeaders(TypeJobRun, payload, headers, asynq.TaskID(jobID))
}

// QueueConfig sets how job tasks are enqueued.
type QueueConfig struct {
	// Name of the asynq queue of tasks that name none.
	Name string
	// MaxRetry is the number of retries after the first attempt (2 = 3 attempts).
	MaxRetry int
	// JobTimeout bounds one attempt of a task that names no deadline; the handler's
	// context is cancelled after it.
	JobTimeout time.Duration
	// Retention keeps a finished task (and so its id) this long, so a late second
	// enqueue of a finished job is refused as a duplicate instead of running it again.
	Retention time.Duration
}

// DefaultQueueConfig is the contract's default: 10 minutes per attempt, 3 attempts.
func DefaultQueueConfig() QueueConfig {
	return QueueConfig{Name: DefaultQueueName, MaxRetry: 2, JobTimeout: 10 * time.Minute, Retention: 24 * time.Hour}
}

// Validate names the setting that is out of range.
func (c QueueConfig) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("queue Name: must not be empty")
	case c.MaxRetry < 0:
		return fmt.Errorf("queue MaxRetry: %d is negative", c.MaxRetry)
	case c.JobTimeout <= 0:
		return fmt.Errorf("queue JobTimeout: %s must be positive", c.JobTimeout)
	case c.Retention < 0:
		return fmt.Errorf("queue Retention: %s is negative", c.Retention)
	}
	return nil
}

// Queue hands jobs to workers through asynq. It implements domain.Queue.
type Queue struct {
	cfg       QueueConfig
	rdb       redis.UniversalClient
	client    *asynq.Client
	inspector *asynq.Inspector
}

var _ domain.Queue = (*Queue)(nil)

// NewQueue returns a queue with DefaultQueueConfig.
func NewQueue(opt asynq.RedisConnOpt) *Queue {
	q, err := NewQueueWithConfig(opt, DefaultQueueConfig())
	if err != nil {
		panic(err) // the default configuration is valid
	}
	return q
}

// NewQueueWithConfig returns a queue with cfg; an invalid cfg is an error.
func NewQueueWithConfig(opt asynq.RedisConnOpt, cfg QueueConfig) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rdb := newRedisClient(opt)
	return &Queue{cfg: cfg, rdb: rdb, client: asynq.NewClientFromRedisClient(rdb),
		inspector: asynq.NewInspectorFromRedisClient(rdb)}, nil
}

// EnqueueJob queues the job's task on the queue of its engines, with its deadline
// (the configured ones when the task names none). Enqueueing a job that is already
// queued, running or recently finished does nothing and is not an error: the task id
// is the job id.
func (q *Queue) EnqueueJob(ctx context.Context, t domain.JobTask) error {
	if _, err := q.enqueue(ctx, t); err != nil {
		return err
	}
	return nil
}

// enqueue queues the job's task; false when a task with its id already exists.
func (q *Queue) enqueue(ctx context.Context, t domain.JobTask) (bool, error) {
	return q.enqueueAs(ctx, t, t.JobID, q.cfg.MaxRetry)
}

// enqueueAs enqueues a task of job t under the task id id, allowed maxRetry retries.
func (q *Queue) enqueueAs(ctx context.Context, t domain.JobTask, id string, maxRetry int) (bool, error) {
	if t.JobID == "" {
		return false, errors.New("enqueue job: empty job id")
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = q.cfg.JobTimeout
	}
	// asynq keeps whole seconds, dropping the rest: rounded up, so that the queue never
	// takes the slot back before the attempt's own deadline.
	timeout = (timeout + time.Second - 1).Truncate(time.Second)
	queue := q.queueOf(t)
	ctx, span := domain.StartSpan(ctx, "enqueue job", attribute.String("filemill.job_id", t.JobID),
		attribute.String("messaging.destination.name", queue))
	_, err := q.client.EnqueueContext(ctx, newJobRunTask(ctx, t.JobID),
		asynq.TaskID(id),
		asynq.Queue(queue),
		asynq.MaxRetry(maxRetry),
		asynq.Timeout(timeout),
		asynq.Retention(q.cfg.Retention),
	)
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict):
		span.SetAttributes(attribute.Bool("filemill.already_queued", true))
		span.End()
		return false, nil
	case err != nil:
		domain.EndSpan(span, err)
		return false, fmt.Errorf("enqueue job %s: %w", t.JobID, err)
	}
	span.End()
	publishQueued(ctx, q.rdb, queue)
	return true, nil
}

// queueOf is the queue of a job's task: its engines', or the configured one.
func (q *Queue) queueOf(t domain.JobTask) string {
	if t.Queue != "" {
		return t.Queue
	}
	return q.cfg.Name
}

// RedriveJob makes sure the task of an unfinished job will run. The task is looked for
// in the job's own queue first, then in every other queue Redis knows (a job whose
// engines moved to another queue since it was enqueued is found where it was put):
//   - none (lost with Redis, or the enqueue after the job's write failed): enqueued
//     on the job's queue;
//   - archived (its attempts ran out without an outcome: a worker killed, or the store
//     gone, on its last attempt) or completed (its attempt ended without one): run
//     again, keeping its retry count, so attempts that counted stay counted and an
//     exhausted task gets exactly one more, whose failure fails the job;
//   - active while the job's lease was lost (t.LeaseLost: its worker died): another
//     task is enqueued beside it, under an id of the job and its attempts so far, with
//     the retries the job has left. asynq would give the dead worker's task back only
//     after its own lease and recovery scan, a minute or two later, whatever the job's
//     lease; when it does, that task's attempt finds the job taken or finished and
//     ends. A job with no attempt left is left to asynq, as before;
//   - pending, scheduled, retrying or active: left alone.
//
// It reports whether it enqueued or ran a task. Two callers at once are safe: the
// enqueue is by task id, and running a task again moves it once.
func (q *Queue) RedriveJob(ctx context.Context, t domain.JobTask) (bool, error) {
	known, err := q.inspector.Queues()
	if err != nil {
		return false, fmt.Errorf("redrive job %s: %w", t.JobID, err)
	}
	own := q.queueOf(t)
	if !slices.Contains(known, own) {
		// asynq registers a queue in Redis on a client's first enqueue only; a Redis
		// that restarted empty forgot it, and the Inspector cannot see into a queue it
		// does not know. Register it again.
		if err := q.rdb.SAdd(ctx, asynqQueuesKey, own).Err(); err != nil {
			return false, fmt.Errorf("redrive job %s: register queue %s: %w", t.JobID, own, err)
		}
	}
	queues := append([]string{own}, slices.DeleteFunc(known, func(name string) bool { return name == own })...)
	for _, name := range queues {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		info, err := q.inspector.GetTaskInfo(name, t.JobID)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("redrive job %s: %w", t.JobID, err)
		}
		if info.State == asynq.TaskStateActive && t.LeaseLost && t.Attempts <= q.cfg.MaxRetry {
			return q.enqueueAs(ctx, t, fmt.Sprintf("%s~%d", t.JobID, t.Attempts), q.cfg.MaxRetry-t.Attempts)
		}
		if info.State != asynq.TaskStateArchived && info.State != asynq.TaskStateCompleted {
			return false, nil
		}
		if err := q.inspector.RunTask(name, t.JobID); err != nil {
			if now, err2 := q.inspector.GetTaskInfo(name, t.JobID); err2 == nil && now.State != info.State {
				return false, nil // another sweep ran it first
			}
			return false, fmt.Errorf("redrive job %s: run %s task: %w", t.JobID, info.State, err)
		}
		publishQueued(ctx, q.rdb, name)
		return true, nil
	}
	return q.enqueue(ctx, t)
}

// Ping checks that Redis answers.
func (q *Queue) Ping(ctx context.Context) error {
	if err := q.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// Close releases the connections.
func (q *Queue) Close() error { return q.rdb.Close() }

// newRedisClient opens the one connection pool a component shares between its asynq
// parts, so they close together.
func newRedisClient(opt asynq.RedisConnOpt) redis.UniversalClient {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		// Every RedisConnOpt asynq ships makes a go-redis client; anything else is a bug.
		panic(fmt.Sprintf("jobs: unsupported asynq.RedisConnOpt %T", opt))
	}
	return c
}
