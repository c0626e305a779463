package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hibiken/asynq"
)

// asynqImpl drives github.com/hibiken/asynq with its defaults except
// Concurrency (and, because the retry scenario asks for backoff 0, a
// RetryDelayFunc of 0). Notable defaults: an idle processor polls its queues
// every TaskCheckInterval (1s), and scheduled and retry tasks are moved to
// pending every DelayedTaskCheckInterval (5s).
type asynqImpl struct {
	cfg    config
	client *asynq.Client
	insp   *asynq.Inspector
	srv    *asynq.Server
}

func newAsynq(cfg config) (impl, error) {
	opt := asynq.RedisClientOpt{Addr: cfg.RedisAddr}
	return &asynqImpl{cfg: cfg, client: asynq.NewClient(opt), insp: asynq.NewInspector(opt)}, nil
}

const asynqTaskType = "bench"

func (a *asynqImpl) Add(ctx context.Context, j jobSpec) error {
	data, err := json.Marshal(payload{I: j.I, At: j.At, P: j.Pad})
	if err != nil {
		return err
	}
	opts := []asynq.Option{asynq.Queue(queueName)}
	if j.Attempts > 1 {
		opts = append(opts, asynq.MaxRetry(j.Attempts-1))
	}
	if j.At != 0 {
		opts = append(opts, asynq.ProcessAt(time.UnixMicro(j.At)))
	}
	if j.DedupID != "" {
		// asynq's deduplication: a task id is refused while the task exists.
		opts = append(opts, asynq.TaskID(j.DedupID))
	}
	if j.JobID != "" {
		opts = append(opts, asynq.TaskID(j.JobID))
	}
	_, err = a.client.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, data), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		err = nil
	}
	return err
}

// AddBulk: asynq has no bulk enqueue API (see bench/README.md).
func (a *asynqImpl) AddBulk(context.Context, []jobSpec) error { return errNoBulk }

func (a *asynqImpl) Start(ctx context.Context, h handler) error {
	a.srv = asynq.NewServer(asynq.RedisClientOpt{Addr: a.cfg.RedisAddr}, asynq.Config{
		Concurrency: a.cfg.Concurrency,
		Queues:      map[string]int{queueName: 1},
		RetryDelayFunc: func(n int, _ error, _ *asynq.Task) time.Duration {
			if a.cfg.Backoff == "exp" {
				return expDelay(n)
			}
			return 0
		},
		LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(asynqTaskType, func(ctx context.Context, t *asynq.Task) error {
		var p payload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return err
		}
		retried, _ := asynq.GetRetryCount(ctx)
		return h(ctx, p, retried+1)
	})
	return a.srv.Start(mux)
}

func (a *asynqImpl) Stop(context.Context) error {
	if a.srv != nil {
		a.srv.Shutdown()
		a.srv = nil
	}
	return nil
}

// Drained: successful tasks are deleted (no Retention), so the queue is
// empty exactly when every task finished.
func (a *asynqImpl) Drained(ctx context.Context, n int) (bool, error) {
	info, err := a.insp.GetQueueInfo(queueName)
	if err != nil {
		return false, err
	}
	return info.Size == 0, nil
}

func (a *asynqImpl) Close() {
	_ = a.client.Close()
	_ = a.insp.Close()
}
