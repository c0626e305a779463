package inspect

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
)

// Storm defaults. Each StormOptions field's doc names the one it uses.
const (
	StormWindowDefault         = 5 * time.Second
	StormHorizonDefault        = 10 * time.Minute
	StormClusterShareDefault   = 0.5
	StormClusterMinJobsDefault = 100
	StormGrowthPerSecDefault   = 20.0
	StormGrowthWindowDefault   = time.Minute
	StormGrowthMinSpanDefault  = 10 * time.Second
)

// StormOptions tune the retry-storm alert of DelayedStats. Nil means
// defaults.
//
// A retry storm is many jobs coming back at the same moment, typically
// because they failed together (an outage) and back off by the same amount
// (no jitter). DelayedStats measures two things:
//
// Clustering. Let now be the time of the reading. The considered jobs are
// the delayed jobs due before now+Horizon (overdue jobs included: they run
// as soon as a worker is free). The peak window is the busiest of these
// windows: every [now + k·Window/2, now + k·Window/2 + Window) for k = 0, 1,
// … inside the horizon, and the overdue jobs (due before now) taken as one
// window. Clustering = jobs in the peak window / considered jobs, in [0, 1].
// The clustering alert fires when Clustering ≥ ClusterShare and the peak
// window holds at least ClusterMinJobs jobs.
//
// Growth. Every DelayedStats call records the delayed set's size. Growth is
// the slope between the oldest and newest size recorded within GrowthWindow,
// in jobs per second, reported once the two are at least GrowthMinSpan apart.
// The growth alert fires when Growth ≥ GrowthPerSecond.
type StormOptions struct {
	// Window is the width of the clustering window and of one histogram
	// bucket. Defaults to StormWindowDefault (5s).
	Window time.Duration
	// Horizon is how far ahead of now the histogram and the clustering
	// look. Defaults to StormHorizonDefault (10m).
	Horizon time.Duration
	// ClusterShare is the clustering alert's share threshold, in (0, 1].
	// Defaults to StormClusterShareDefault (0.5).
	ClusterShare float64
	// ClusterMinJobs is the fewest jobs the peak window must hold for the
	// clustering alert. Defaults to StormClusterMinJobsDefault (100).
	ClusterMinJobs int
	// GrowthPerSecond is the growth alert's threshold in jobs per second.
	// Defaults to StormGrowthPerSecDefault (20).
	GrowthPerSecond float64
	// GrowthWindow is how long size samples are kept. Defaults to
	// StormGrowthWindowDefault (1m).
	GrowthWindow time.Duration
	// GrowthMinSpan is the least time between the samples growth is
	// measured over. Defaults to StormGrowthMinSpanDefault (10s).
	GrowthMinSpan time.Duration
}

func (o *StormOptions) withDefaults() StormOptions {
	var r StormOptions
	if o != nil {
		r = *o
	}
	r.Window = cmp.Or(r.Window, StormWindowDefault)
	r.Horizon = cmp.Or(r.Horizon, StormHorizonDefault)
	r.ClusterShare = cmp.Or(r.ClusterShare, StormClusterShareDefault)
	r.ClusterMinJobs = cmp.Or(r.ClusterMinJobs, StormClusterMinJobsDefault)
	r.GrowthPerSecond = cmp.Or(r.GrowthPerSecond, StormGrowthPerSecDefault)
	r.GrowthWindow = cmp.Or(r.GrowthWindow, StormGrowthWindowDefault)
	r.GrowthMinSpan = cmp.Or(r.GrowthMinSpan, StormGrowthMinSpanDefault)
	return r
}

func (o *StormOptions) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: inspect.StormOptions."+format, append([]any{drover.ErrInvalidOption}, args...)...)
	}
	switch {
	case o.Window < 2*time.Millisecond:
		return bad("Window must be at least 2ms, got %s", o.Window)
	case o.Horizon < o.Window:
		return bad("Horizon must be at least Window (%s), got %s", o.Window, o.Horizon)
	case o.Horizon/(o.Window/2) > 10000:
		return bad("Horizon must span at most 5000 windows, got %s / %s", o.Horizon, o.Window)
	case o.ClusterShare <= 0 || o.ClusterShare > 1 || math.IsNaN(o.ClusterShare):
		return bad("ClusterShare must be in (0, 1], got %v", o.ClusterShare)
	case o.ClusterMinJobs < 1:
		return bad("ClusterMinJobs must be at least 1, got %d", o.ClusterMinJobs)
	case o.GrowthPerSecond <= 0 || math.IsNaN(o.GrowthPerSecond) || math.IsInf(o.GrowthPerSecond, 0):
		return bad("GrowthPerSecond must be a positive finite number, got %v", o.GrowthPerSecond)
	case o.GrowthWindow <= 0 || o.GrowthMinSpan <= 0 || o.GrowthMinSpan > o.GrowthWindow:
		return bad("GrowthMinSpan must be positive and at most GrowthWindow, got %s and %s", o.GrowthMinSpan, o.GrowthWindow)
	}
	return nil
}

type sample struct {
	at    time.Time
	count int64
}

// SizeSample is the delayed set's size at a time.
type SizeSample struct {
	At    Instant `json:"at"`
	Count int64   `json:"count"`
}

// Bucket is one bar of the due-time histogram: jobs due in
// [Start, Start+Window).
type Bucket struct {
	Start Instant `json:"start"`
	Count int64   `json:"count"`
}

// Alert kinds.
const (
	AlertClustering = "clustering"
	AlertGrowth     = "growth"
	AlertBudget     = "budget"
)

// Alert is a condition an operator should look at.
type Alert struct {
	Kind      string  `json:"kind"`
	Queue     string  `json:"queue"`
	Message   string  `json:"message"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// DelayedStats is one reading of a queue's delayed set.
type DelayedStats struct {
	Queue string  `json:"queue"`
	At    Instant `json:"at"`
	// Count is the delayed set's size.
	Count int64 `json:"count"`
	// Overdue counts jobs due before At; Later jobs due after the horizon.
	Overdue int64 `json:"overdue"`
	Later   int64 `json:"later"`
	// Window is the bucket width (ms in JSON); Buckets cover
	// [At, At+Horizon).
	Window  time.Duration `json:"-"`
	Buckets []Bucket      `json:"buckets"`
	// Considered counts the jobs due before At+Horizon, overdue included.
	Considered int64 `json:"considered"`
	// PeakStart and PeakCount describe the busiest window (see
	// StormOptions); PeakOverdue says the overdue jobs were the peak.
	PeakStart   Instant `json:"peakStart"`
	PeakCount   int64   `json:"peakCount"`
	PeakOverdue bool    `json:"peakOverdue"`
	// PeakSampled and PeakRetries: when the clustering alert fires on a
	// window ahead (not the overdue jobs), up to PeakSampleSize jobs of the
	// peak window are read and those that failed before (attemptsMade > 0)
	// counted, so the alert can tell retries coming back together from
	// jobs merely scheduled together. Both are 0 otherwise.
	PeakSampled int `json:"peakSampled"`
	PeakRetries int `json:"peakRetries"`
	// Clustering is PeakCount / Considered (0 when nothing is considered).
	Clustering float64 `json:"clustering"`
	// Growth is the delayed set's growth in jobs per second; GrowthKnown is
	// false until samples span GrowthMinSpan.
	Growth      float64 `json:"growth"`
	GrowthKnown bool    `json:"growthKnown"`
	// Sizes are the delayed set's sizes this Inspector recorded within
	// GrowthWindow, oldest first: the growth chart.
	Sizes []SizeSample `json:"sizes"`
	// Alerts are the storm alerts that fire (clustering, growth).
	Alerts []Alert `json:"alerts"`
}

// Storm reports whether a storm alert fires.
func (s *DelayedStats) Storm() bool { return len(s.Alerts) > 0 }

// DelayedStats reads the delayed set of queue: its size, the histogram of
// due times, clustering and growth, and the storm alerts they raise. It
// costs one pipeline of 2·Horizon/Window + 3 commands and records a size
// sample for growth; when the clustering alert fires on a window ahead, one
// ZRANGEBYSCORE and a pipeline of up to PeakSampleSize HMGETs more read
// whether the peak's jobs are retries (PeakSampled, PeakRetries).
func (i *Inspector) DelayedStats(ctx context.Context, queue string) (*DelayedStats, error) {
	if _, err := i.existing(ctx, queue); err != nil {
		return nil, err
	}
	o := i.opts.Storm
	now := i.now(ctx)
	k := i.keys(queue)
	half := o.Window / 2
	n := int((o.Horizon + half - 1) / half)
	nowScore := scoreOf(now)
	halfScore := keys.DelayedScore(half.Milliseconds(), 0) // a half window's width in score

	var card *redis.IntCmd
	var overdue, later *redis.IntCmd
	subs := make([]*redis.IntCmd, n)
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		card = p.ZCard(ctx, k.Delayed())
		overdue = p.ZCount(ctx, k.Delayed(), "-inf", "("+formatScore(nowScore))
		for s := range n {
			from := nowScore + int64(s)*halfScore
			subs[s] = p.ZCount(ctx, k.Delayed(), formatScore(from), "("+formatScore(from+halfScore))
		}
		later = p.ZCount(ctx, k.Delayed(), formatScore(nowScore+int64(n)*halfScore), "+inf")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read delayed set of queue %q: %w", queue, err)
	}
	st := &DelayedStats{
		Queue: queue, At: Instant{now}, Count: card.Val(), Overdue: overdue.Val(), Later: later.Val(),
		Window: o.Window, Alerts: []Alert{},
	}
	counts := make([]int64, n)
	for s, c := range subs {
		counts[s] = c.Val()
	}
	st.Considered = st.Overdue
	for _, c := range counts {
		st.Considered += c
	}
	for b := 0; b < n; b += 2 {
		c := counts[b]
		if b+1 < n {
			c += counts[b+1]
		}
		st.Buckets = append(st.Buckets, Bucket{Start: Instant{now.Add(time.Duration(b) * half)}, Count: c})
	}
	st.PeakCount, st.PeakOverdue, st.PeakStart = st.Overdue, st.Overdue > 0, Instant{now}
	for s := range n {
		c := counts[s]
		if s+1 < n {
			c += counts[s+1]
		}
		if c > st.PeakCount {
			st.PeakCount, st.PeakOverdue, st.PeakStart = c, false, Instant{now.Add(time.Duration(s) * half)}
		}
	}
	if st.Considered > 0 {
		st.Clustering = float64(st.PeakCount) / float64(st.Considered)
	}
	st.Growth, st.GrowthKnown, st.Sizes = i.recordSample(queue, now, st.Count)

	if st.Clustering >= o.ClusterShare && st.PeakCount >= int64(o.ClusterMinJobs) {
		msg := fmt.Sprintf("retry storm: %d delayed jobs (%.0f%% of %d) are due within %s from %s",
			st.PeakCount, st.Clustering*100, st.Considered, o.Window, st.PeakStart.Format(time.RFC3339))
		if !st.PeakOverdue {
			from := scoreOf(st.PeakStart.Time)
			if err := i.samplePeak(ctx, k, from, from+2*halfScore, st); err != nil {
				return nil, fmt.Errorf("read delayed jobs of queue %q: %w", queue, err)
			}
			switch {
			case st.PeakSampled > 0 && st.PeakRetries == 0:
				// Jobs added with one delay, or a scheduler's runs, due
				// together: a burst, but nothing failed.
				msg = fmt.Sprintf("%d delayed jobs (%.0f%% of %d) are due within %s from %s (none of %d sampled has failed before: "+
					"a burst of scheduled jobs, not retries)",
					st.PeakCount, st.Clustering*100, st.Considered, o.Window, st.PeakStart.Format(time.RFC3339), st.PeakSampled)
			case st.PeakRetries < st.PeakSampled:
				msg += fmt.Sprintf(" (%d of %d sampled are retries)", st.PeakRetries, st.PeakSampled)
			}
		}
		if st.PeakOverdue {
			// Past due is not a storm of retries: a worker moves due jobs
			// to wait when it fetches, so none fetched for a while.
			msg = fmt.Sprintf("%d delayed jobs (%.0f%% of %d) are overdue: no worker has moved them to wait (none is running, or all are busy); "+
				"they all run as soon as one does", st.PeakCount, st.Clustering*100, st.Considered)
		}
		st.Alerts = append(st.Alerts, Alert{
			Kind: AlertClustering, Queue: queue, Value: st.Clustering, Threshold: o.ClusterShare, Message: msg,
		})
	}
	if st.GrowthKnown && st.Growth >= o.GrowthPerSecond {
		st.Alerts = append(st.Alerts, Alert{
			Kind: AlertGrowth, Queue: queue, Value: st.Growth, Threshold: o.GrowthPerSecond,
			Message: fmt.Sprintf("retry storm: the delayed set grows by %.1f jobs/s (%d now)", st.Growth, st.Count),
		})
	}
	return st, nil
}

// DelayedAlerts returns the storm alerts of queue whose delayed set holds
// count jobs (as just read, say by Overview): DelayedStats' alerts, without
// reading the set's histogram when it holds fewer than ClusterMinJobs jobs,
// which cannot make a clustering alert (the growth alert needs the count
// alone). An overview of 5,000 queues with a few delayed jobs each read
// every histogram, about 240 commands a queue, and took seconds.
func (i *Inspector) DelayedAlerts(ctx context.Context, queue string, count int64) ([]Alert, error) {
	o := i.opts.Storm
	if count >= int64(o.ClusterMinJobs) {
		st, err := i.DelayedStats(ctx, queue)
		if err != nil {
			return nil, err
		}
		return st.Alerts, nil
	}
	if ctx == nil {
		return nil, errNilContext
	}
	growth, known, _ := i.recordSample(queue, i.now(ctx), count)
	alerts := []Alert{}
	if known && growth >= o.GrowthPerSecond {
		alerts = append(alerts, Alert{
			Kind: AlertGrowth, Queue: queue, Value: growth, Threshold: o.GrowthPerSecond,
			Message: fmt.Sprintf("retry storm: the delayed set grows by %.1f jobs/s (%d now)", growth, count),
		})
	}
	return alerts, nil
}

// recordSample stores a delayed-set size and returns the growth over the
// samples kept, and the samples.
func (i *Inspector) recordSample(queue string, at time.Time, count int64) (float64, bool, []SizeSample) {
	o := i.opts.Storm
	i.mu.Lock()
	defer i.mu.Unlock()
	ss := i.samples[queue]
	// Keep at most one sample per 100ms: frequent readers add nothing.
	if len(ss) == 0 || at.Sub(ss[len(ss)-1].at) >= 100*time.Millisecond {
		ss = append(ss, sample{at: at, count: count})
	}
	cut := 0
	for cut < len(ss)-1 && at.Sub(ss[cut].at) > o.GrowthWindow {
		cut++
	}
	ss = ss[cut:]
	i.samples[queue] = ss
	sizes := make([]SizeSample, len(ss))
	for k, s := range ss {
		sizes[k] = SizeSample{At: Instant{s.at}, Count: s.count}
	}
	first, last := ss[0], ss[len(ss)-1]
	span := last.at.Sub(first.at)
	if span < o.GrowthMinSpan {
		return 0, false, sizes
	}
	return float64(last.count-first.count) / span.Seconds(), true, sizes
}

// PeakSampleSize is how many jobs of the peak window DelayedStats reads to
// tell retries from jobs scheduled together.
const PeakSampleSize = 20

// samplePeak reads up to PeakSampleSize jobs due in [from, to) and counts
// those that failed before (attemptsMade, or its pre-v5 name, above 0).
// A job whose hash is gone (removed meanwhile) is not counted.
func (i *Inspector) samplePeak(ctx context.Context, k keys.Queue, from, to int64, st *DelayedStats) error {
	ids, err := i.rdb.ZRangeByScore(ctx, k.Delayed(), &redis.ZRangeBy{
		Min: formatScore(from), Max: "(" + formatScore(to), Count: PeakSampleSize,
	}).Result()
	if err != nil || len(ids) == 0 {
		return err
	}
	reads := make([]*redis.SliceCmd, len(ids))
	if _, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, id := range ids {
			reads[n] = p.HMGet(ctx, k.Job(id), "atm", "attemptsMade", "timestamp")
		}
		return nil
	}); err != nil {
		return err
	}
	for _, r := range reads {
		v := r.Val()
		if len(v) < 3 || v[2] == nil {
			continue
		}
		st.PeakSampled++
		for _, f := range v[:2] {
			if s, ok := f.(string); ok {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
					st.PeakRetries++
					break
				}
			}
		}
	}
	return nil
}
