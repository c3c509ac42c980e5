package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/domain"
)

// Task types.
const (
	// TypeJobRun runs one job (an operation or a preset on a file).
	TypeJobRun = "job:run"
	// TypeSweepQueuedJobs re-enqueues queued jobs whose task went missing.
	TypeSweepQueuedJobs = "sweep:queued_jobs"
	// TypeSweepUploads expires upload sessions past their deadline.
	TypeSweepUploads = "sweep:uploads"
	// TypeSweepIdempotency deletes expired idempotency records.
	TypeSweepIdempotency = "sweep:idempotency"
)

// DefaultQueueName is the asynq queue jobs go to.
const DefaultQueueName = "default"

// JobRunPayload is the payload of a TypeJobRun task.
type JobRunPayload struct {
	JobID string `json:"job_id"`
}

// NewJobRunTask returns the task that runs a job. Its task id is the job id, so the
// same job can never be queued twice, whoever enqueues it.
func NewJobRunTask(jobID string) *asynq.Task {
	// Marshalling a struct of one string cannot fail.
	payload, _ := json.Marshal(JobRunPayload{JobID: jobID})
	return asynq.NewTask(TypeJobRun, payload, asynq.TaskID(jobID))
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
	cfg    QueueConfig
	rdb    redis.UniversalClient
	client *asynq.Client
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
	return &Queue{cfg: cfg, rdb: rdb, client: asynq.NewClientFromRedisClient(rdb)}, nil
}

// EnqueueJob queues the job's task on the queue of its engines, with its deadline
// (the configured ones when the task names none). Enqueueing a job that is already
// queued, running or recently finished does nothing and is not an error: the task id
// is the job id.
func (q *Queue) EnqueueJob(ctx context.Context, t domain.JobTask) error {
	if t.JobID == "" {
		return errors.New("enqueue job: empty job id")
	}
	queue, timeout := t.Queue, t.Timeout
	if queue == "" {
		queue = q.cfg.Name
	}
	if timeout <= 0 {
		timeout = q.cfg.JobTimeout
	}
	_, err := q.client.EnqueueContext(ctx, NewJobRunTask(t.JobID),
		asynq.TaskID(t.JobID),
		asynq.Queue(queue),
		asynq.MaxRetry(q.cfg.MaxRetry),
		asynq.Timeout(timeout),
		asynq.Retention(q.cfg.Retention),
	)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue job %s: %w", t.JobID, err)
	}
	return nil
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
