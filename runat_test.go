package drover_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// Reminder is a kind whose own options schedule it: at its SendAt when set,
// else after a minute.
type Reminder struct {
	SendAt time.Time `json:"sendAt"`
}

func (Reminder) Kind() string { return "reminder" }

func (r Reminder) JobOptions() *drover.JobOptions {
	if r.SendAt.IsZero() {
		return &drover.JobOptions{Delay: time.Minute}
	}
	return &drover.JobOptions{RunAt: r.SendAt}
}

// dueOf reads job id's due time from the delayed set (score = due·4096 +
// sequence, BullMQ's encoding); ok is false when the job is not there.
func dueOf(t *testing.T, b *testBundle, id string) (time.Time, bool) {
	t.Helper()
	score, err := b.rdb.ZScore(context.Background(), b.prefix+":"+b.name+":delayed", id).Result()
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(math.Floor(score / 4096))), true
}

// TestRunAt: JobOptions.RunAt is stored as BullMQ stores a delayed job,
// timestamp + delay with the due time RunAt to the millisecond, through
// Add, AddBulk, AddArgs and a flow; a RunAt at or before the timestamp
// queues the job at once; a job's RunAt replaces a default or kind Delay
// (and a job's Delay a kind's RunAt). Setting RunAt with Delay, out of
// range, in DefaultJobOptions or a scheduler template is an error naming the
// option, with nothing written.
func TestRunAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A whole millisecond, so the stored due time compares exactly.
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	ts := time.Now().Add(-time.Minute).Truncate(time.Millisecond)

	type want struct {
		state drover.JobState
		due   time.Time     // zero: not delayed
		delay time.Duration // stored delay; -1: due - timestamp
	}
	cases := []struct {
		name     string
		defaults *drover.JobOptions
		add      func(q *drover.Queue) (*drover.AddResult, error)
		want     want
	}{
		{name: "future", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: at})
		}, want: want{state: drover.StateDelayed, due: at, delay: -1}},
		{name: "with timestamp", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: at, Timestamp: ts})
		}, want: want{state: drover.StateDelayed, due: at, delay: at.Sub(ts)}},
		{name: "past runs at once", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: time.Now().Add(-time.Hour)})
		}, want: want{state: drover.StateWaiting}},
		{name: "before an explicit timestamp runs at once", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: ts.Add(-time.Second), Timestamp: ts})
		}, want: want{state: drover.StateWaiting}},
		{name: "replaces a default delay", defaults: &drover.JobOptions{Delay: 3 * time.Hour},
			add: func(q *drover.Queue) (*drover.AddResult, error) {
				return q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: at})
			}, want: want{state: drover.StateDelayed, due: at, delay: -1}},
		{name: "prioritized when past", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: time.Now().Add(-time.Hour), Priority: 3})
		}, want: want{state: drover.StatePrioritized}},
		{name: "bulk", add: func(q *drover.Queue) (*drover.AddResult, error) {
			res, err := q.AddBulk(ctx, []drover.BulkJob{{Name: "j", Opts: &drover.JobOptions{RunAt: at}}})
			if err != nil {
				return nil, err
			}
			return res[0], nil
		}, want: want{state: drover.StateDelayed, due: at, delay: -1}},
		{name: "kind RunAt", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.AddArgs(ctx, Reminder{SendAt: at}, nil)
		}, want: want{state: drover.StateDelayed, due: at, delay: -1}},
		{name: "call RunAt over kind Delay", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.AddArgs(ctx, Reminder{}, &drover.JobOptions{RunAt: at})
		}, want: want{state: drover.StateDelayed, due: at, delay: -1}},
		{name: "call Delay over kind RunAt", add: func(q *drover.Queue) (*drover.AddResult, error) {
			return q.AddArgs(ctx, Reminder{SendAt: at}, &drover.JobOptions{Delay: time.Second, Timestamp: ts})
		}, want: want{state: drover.StateDelayed, due: ts.Add(time.Second), delay: time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := redistest.Client(t)
			q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix, DefaultJobOptions: tc.defaults})
			require.NoError(t, err)
			b := &testBundle{rdb: rdb, prefix: prefix, name: "q", queue: q}
			res, err := tc.add(q)
			require.NoError(t, err)
			job, err := q.GetJob(ctx, res.Job.ID)
			require.NoError(t, err)
			state, err := q.GetJobState(ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, tc.want.state, state)
			require.True(t, job.Opts.RunAt.IsZero(), "RunAt is stored as a delay")
			due, delayed := dueOf(t, b, job.ID)
			if tc.want.due.IsZero() {
				require.False(t, delayed)
				require.Zero(t, job.Delay)
				require.Zero(t, job.Opts.Delay)
				return
			}
			require.True(t, delayed)
			require.Equal(t, tc.want.due, due, "due time")
			wantDelay := tc.want.delay
			if wantDelay < 0 {
				wantDelay = tc.want.due.Sub(job.Timestamp)
			}
			require.Equal(t, wantDelay, job.Delay, "delay field")
			require.Equal(t, wantDelay, job.Opts.Delay, "opts.delay")
			require.Equal(t, tc.want.due, job.Timestamp.Add(job.Delay), "timestamp + delay")
		})
	}

	t.Run("flow", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := redistest.Client(t)
		f, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix,
			DefaultJobOptions: map[string]*drover.JobOptions{"q": {Delay: 3 * time.Hour}}})
		require.NoError(t, err)
		node, err := f.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Children: []drover.FlowJob{
			{Name: "child", QueueName: "q", Opts: &drover.JobOptions{RunAt: at}},
		}})
		require.NoError(t, err)
		q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		b := &testBundle{rdb: rdb, prefix: prefix, name: "q", queue: q}
		due, ok := dueOf(t, b, node.Children[0].Job.ID)
		require.True(t, ok)
		require.Equal(t, at, due)

		// A parent's delay counts from its children's end: RunAt on it
		// is refused, and nothing of the flow is written.
		before, err := rdb.Keys(ctx, prefix+":*").Result()
		require.NoError(t, err)
		_, err = f.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{RunAt: at},
			Children: []drover.FlowJob{{Name: "child", QueueName: "q"}}})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, "JobOptions.RunAt cannot be used on a flow job with children")
		after, err := rdb.Keys(ctx, prefix+":*").Result()
		require.NoError(t, err)
		require.ElementsMatch(t, before, after)
	})

	refusals := []struct {
		name    string
		run     func(rdb *drover.Queue, prefix string) error
		message string
	}{
		{name: "both", run: func(q *drover.Queue, _ string) error {
			_, err := q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: at, Delay: time.Second})
			return err
		}, message: "JobOptions.Delay and JobOptions.RunAt must not both be set"},
		{name: "both in bulk", run: func(q *drover.Queue, _ string) error {
			_, err := q.AddBulk(ctx, []drover.BulkJob{{Name: "ok"}, {Name: "j", Opts: &drover.JobOptions{RunAt: at, Delay: time.Second}}})
			return err
		}, message: "JobOptions.Delay and JobOptions.RunAt must not both be set"},
		{name: "before the epoch", run: func(q *drover.Queue, _ string) error {
			_, err := q.Add(ctx, "j", nil, &drover.JobOptions{RunAt: time.Unix(-5, 0)})
			return err
		}, message: "JobOptions.RunAt must be between the Unix epoch"},
		{name: "kind with both", run: func(q *drover.Queue, _ string) error {
			_, err := q.AddArgs(ctx, bothKind{}, nil)
			return err
		}, message: `the options of kind "both"`},
		{name: "scheduler template", run: func(q *drover.Queue, _ string) error {
			_, err := q.UpsertJobScheduler(ctx, "s", drover.RepeatOptions{Every: time.Minute},
				&drover.JobTemplate{Opts: &drover.JobOptions{RunAt: at}})
			return err
		}, message: "JobTemplate.Opts must not set JobID, Delay, RunAt"},
		{name: "queue default", run: func(q *drover.Queue, prefix string) error {
			_, err := drover.NewQueue(redistest.Shared(t).Client(t), "q", &drover.QueueOptions{Prefix: prefix,
				DefaultJobOptions: &drover.JobOptions{RunAt: at}})
			return err
		}, message: "QueueOptions.DefaultJobOptions must not set JobID, Deduplication or RunAt"},
		{name: "flow default", run: func(q *drover.Queue, prefix string) error {
			_, err := drover.NewFlowProducer(redistest.Shared(t).Client(t), &drover.FlowProducerOptions{Prefix: prefix,
				DefaultJobOptions: map[string]*drover.JobOptions{"q": {RunAt: at}}})
			return err
		}, message: `FlowProducerOptions.DefaultJobOptions["q"] must not set JobID, Deduplication or RunAt`},
	}
	for _, tc := range refusals {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := redistest.Client(t)
			q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
			require.NoError(t, err)
			err = tc.run(q, prefix)
			require.ErrorIs(t, err, drover.ErrInvalidOption)
			require.ErrorContains(t, err, tc.message)
			keys, err := rdb.Keys(ctx, prefix+":*").Result()
			require.NoError(t, err)
			require.Empty(t, keys, "nothing written")
		})
	}
}

// bothKind's options set Delay and RunAt.
type bothKind struct{}

func (bothKind) Kind() string { return "both" }
func (bothKind) JobOptions() *drover.JobOptions {
	return &drover.JobOptions{Delay: time.Second, RunAt: time.Now().Add(time.Hour)}
}
