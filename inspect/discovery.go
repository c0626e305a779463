package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
)

// ErrQueueNotFound: no key of the queue exists under the prefix. Reads and
// actions on such a queue return it and write nothing.
var ErrQueueNotFound = errors.New("queue not found")

// errNilContext is the error of a method given a nil context.Context,
// which go-redis would dereference (a panic).
var errNilContext = fmt.Errorf("%w: the context.Context is nil (pass context.Background(), or the caller's context)",
	drover.ErrInvalidOption)

// DiscoveryIntervalDefault is how often the background discovery refreshes
// the queue list.
const DiscoveryIntervalDefault = 3 * time.Second

// queueHandlesMax bounds the cached queue handles.
const queueHandlesMax = 1024

// discovery caches the queue names found by scanning the keyspace. The
// first Queues call scans (or reads the list another Inspector published)
// and starts a loop that rescans every DiscoveryInterval in the
// background until Close, so requests never pay for a scan. Each scan's
// result is published in Redis for Inspectors in short-lived processes
// (the CLI).
type discovery struct {
	scanMu sync.Mutex // one scan at a time

	mu      sync.Mutex
	names   []string
	set     map[string]bool
	at      time.Time
	used    time.Time // the last Queues call
	running bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}
	kick    chan struct{} // asks the loop to rescan now
	// readOnly logs once that this Redis user may not keep what scans
	// found (cacheWriteFailed).
	readOnly sync.Once
	// scanRefused is set when Redis refused SCAN (an ACL without it, a
	// managed Redis): listings then come from the registry and the worker
	// connections only, and SCAN is not sent again (listQueues).
	scanRefused atomic.Bool
}

// discoveryIdleRounds: the loop skips its rescans once Queues has not been
// called for this many intervals (an idle dashboard costs Redis nothing);
// the next call answers from the cache and wakes it.
const discoveryIdleRounds = 10

// publishedQueues is the discovery list an Inspector publishes in Redis.
type publishedQueues struct {
	At     int64    `json:"at"`
	Queues []string `json:"queues"`
}

// Queues lists the queues under the prefix, sorted by name. A queue exists
// while any of its own keys does (meta, id, wait, events, ...), whoever
// wrote it. The list comes from a cache a background loop refreshes every
// Options.DiscoveryInterval: a queue drover writes, or a Node worker runs,
// shows within that interval; one only Node producers write shows at the
// next full scan of the keyspace (every master of a cluster), which the
// loop runs every interval on a small keyspace and less often on a large
// one (fullScanSpacing: about every 10 s at 1M keys). The first call
// scans, unless another Inspector published a fresh list or the registry
// answers; the first after the loop rested (idle) reads the registry.
func (i *Inspector) Queues(ctx context.Context) ([]string, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	d := &i.disc
	d.mu.Lock()
	now := time.Now()
	d.used = now
	if !d.at.IsZero() {
		names := slices.Clone(d.names)
		stale := now.Sub(d.at) > 2*i.opts.DiscoveryInterval
		if stale && d.kick != nil {
			select { // stale after idling: a round now, in the background (a full scan if one is due)
			case d.kick <- struct{}{}:
			default:
			}
		}
		d.mu.Unlock()
		if stale {
			// The cache is as old as the rest: read the registry with it
			// (no scan step; the round kicked above looks for Node-only
			// queues), so the queues drover created since show and the
			// ones gone since do not, on this call already.
			if current, ok := i.readRegistry(ctx, false, names); ok {
				i.setDiscovered(current)
				return slices.Clone(current), nil
			}
		}
		return names, nil
	}
	d.mu.Unlock()

	d.scanMu.Lock()
	defer d.scanMu.Unlock()
	d.mu.Lock()
	if !d.at.IsZero() { // another caller filled it meanwhile
		names := slices.Clone(d.names)
		d.mu.Unlock()
		return names, nil
	}
	d.mu.Unlock()
	// A published list is up to two intervals old: the queues a drover
	// producer registered since, or that went since, are not in it. The
	// registry, read with it, adds the first and the existence check drops
	// the second; the publisher's own scans stand for the scan step.
	published, fresh := i.readPublished(ctx)
	names, ok := i.readRegistry(ctx, !fresh, published)
	if !ok && fresh {
		names, ok = published, true
	}
	if !ok {
		var err error
		var scanned bool
		if names, scanned, err = i.listQueues(ctx); err != nil {
			return nil, err
		}
		if scanned {
			// Not a listing without SCAN: the next process would take
			// it for a scan's and not read the (unseeded) registry.
			i.publish(ctx, names)
			i.seedRegistry(ctx, names)
		}
	}
	i.setDiscovered(names)
	i.startDiscovery() //nolint:contextcheck // the loop outlives the call: Close stops it
	return slices.Clone(names), nil
}

func (i *Inspector) setDiscovered(names []string) {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	d := &i.disc
	d.mu.Lock()
	d.names, d.set, d.at = names, set, time.Now()
	d.mu.Unlock()
}

// readPublished reads the list another Inspector published, if it is fresh.
func (i *Inspector) readPublished(ctx context.Context) ([]string, bool) {
	if i.opts.DiscoveryInterval < 0 {
		return nil, false
	}
	raw, err := i.rdb.Get(ctx, keys.Discovery(i.opts.Prefix)).Bytes()
	if err != nil {
		return nil, false
	}
	var p publishedQueues
	if json.Unmarshal(raw, &p) != nil || time.Since(time.UnixMilli(p.At)) > 2*i.opts.DiscoveryInterval {
		return nil, false
	}
	return p.Queues, true
}

// A cold listing (no Inspector alive to publish a fresh list, as `drover
// queues` run alone) reads the registry set (keys.Registry) instead of
// scanning the keyspace. drover's producers and workers add their queue to
// it themselves; a queue that only Node BullMQ writes enters it by a scan.
// The first listing under a prefix scans the whole keyspace once and marks
// the registry seeded (keys.RegistrySeeded, no TTL). After that no request
// pays for a full scan: each cold listing also takes the queues of the
// BullMQ-named worker connections (CLIENT LIST, so a queue Node workers run
// shows at once) and advances a scan of coldScanCount keys from a cursor
// kept in Redis (keys.RegistryCursors), so a queue only Node producers
// write shows after keyspace/coldScanCount cold listings, or within
// DiscoveryInterval while an Inspector with its background loop runs (a
// dashboard), or at once with Rescan (`drover queues --scan`).

// coldScanCount is the SCAN COUNT of a cold listing's one scan step: about
// 10 ms of Redis time at 1M keys on a small machine.
const coldScanCount = 10000

// readRegistry lists the queues from the registry, if a scan seeded it:
// one round trip for the marker, the set, the worker connections and (with
// step, for a cold listing) a scan step, one to check which queues exist
// (a removed queue is dropped from the set) and, when the step or the
// connections found a queue the set lacks, one SADD. The background loop
// reads it without the step: its own full scans find Node's queues. The
// names in also (a published list) are checked and added like the ones
// the step finds.
func (i *Inspector) readRegistry(ctx context.Context, step bool, also []string) ([]string, bool) {
	if i.opts.DiscoveryInterval < 0 {
		return nil, false
	}
	reg := keys.Registry(i.opts.Prefix)
	var seeded *redis.IntCmd
	var members *redis.StringSliceCmd
	var clients *redis.StringCmd
	var cursors *redis.MapStringStringCmd
	// Each reply's error is checked on its own: CLIENT LIST may be refused
	// (ACL, managed Redis) and the set alone still answers.
	_, _ = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		seeded = p.Exists(ctx, keys.RegistrySeeded(i.opts.Prefix))
		members = p.SMembers(ctx, reg)
		clients = p.ClientList(ctx)
		cursors = p.HGetAll(ctx, keys.RegistryCursors(i.opts.Prefix))
		return nil
	})
	if seeded.Err() != nil || (seeded.Val() == 0 && !i.disc.scanRefused.Load()) || members.Err() != nil {
		return nil, false
	}
	known := make(map[string]bool, len(members.Val()))
	var names []string
	add := func(n string) {
		if !known[n] && keys.ValidateName(n) == nil {
			known[n] = true
			names = append(names, n)
		}
	}
	for _, n := range members.Val() {
		add(n)
	}
	inSet := len(names)
	if clients.Err() == nil {
		for _, line := range strings.Split(clients.Val(), "\n") {
			if q, _, ok := i.workerName(clientFields(line)["name"]); ok {
				add(q)
			}
		}
	}
	for _, n := range also {
		add(n)
	}
	if step {
		for _, n := range i.scanStep(ctx, cursors.Val()) {
			add(n)
		}
	}
	exists := make([]*redis.IntCmd, len(names))
	if _, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, name := range names {
			exists[n] = p.Exists(ctx, i.keys(name).QueueKeys()...) // one slot per queue
		}
		return nil
	}); err != nil {
		return nil, false
	}
	live := make([]string, 0, len(names))
	var gone, found []any
	for n, name := range names {
		switch {
		case exists[n].Val() > 0:
			live = append(live, name)
			if n >= inSet {
				found = append(found, name)
			}
		case n < inSet:
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		i.rdb.SRem(ctx, reg, gone...)
	}
	if len(found) > 0 {
		i.rdb.SAdd(ctx, reg, found...)
	}
	slices.Sort(live)
	return live, true
}

// scanStep runs one SCAN of coldScanCount keys on each master from the
// cursor stored for it (cursors, by master address) and stores the next
// one, wrapping to 0 after a full pass. It returns the queue names the
// keys it saw belong to. Errors only end the step early: the registry
// still answers. Concurrent cold listings may scan the same step twice;
// that costs time, never a queue (SCAN's cursor is stateless).
func (i *Inspector) scanStep(ctx context.Context, cursors map[string]string) []string {
	if i.disc.scanRefused.Load() {
		return nil
	}
	pattern := keys.ScanPattern(i.opts.Prefix)
	var mu sync.Mutex
	var out []string
	next := map[string]any{}
	step := func(ctx context.Context, c *redis.Client) error {
		addr := c.Options().Addr
		cursor, _ := strconv.ParseUint(cursors[addr], 10, 64)
		ks, cur, err := c.Scan(ctx, cursor, pattern, coldScanCount).Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, k := range ks {
			if name, ok := keys.QueueOf(i.opts.Prefix, k); ok {
				out = append(out, name)
			}
		}
		next[addr] = strconv.FormatUint(cur, 10)
		return nil
	}
	var err error
	switch c := i.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, step)
	case *redis.Client:
		err = step(ctx, c)
	default:
		return nil
	}
	if len(next) > 0 {
		i.rdb.HSet(ctx, keys.RegistryCursors(i.opts.Prefix), next)
	}
	if err != nil && ctx.Err() == nil {
		i.opts.Logger.WarnContext(ctx, "scan step of a cold queue listing", slog.Any(logkey.Error, err))
	}
	return out
}

// seedRegistry adds the queues a full scan found to the registry and
// marks it seeded (at the scan's time, kept until the prefix's keys go).
func (i *Inspector) seedRegistry(ctx context.Context, names []string) {
	if i.opts.DiscoveryInterval < 0 {
		return
	}
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if len(names) > 0 {
			members := make([]any, len(names))
			for n, name := range names {
				members[n] = name
			}
			p.SAdd(ctx, keys.Registry(i.opts.Prefix), members...)
		}
		p.Set(ctx, keys.RegistrySeeded(i.opts.Prefix), time.Now().UnixMilli(), 0)
		return nil
	})
	if err != nil && ctx.Err() == nil {
		i.cacheWriteFailed(ctx, "seed the queue registry", err)
	}
}

// Rescan scans the keyspace for queues now (every master of a cluster),
// refreshes the cache, the published list and the registry with the
// result and returns it: a queue only Node producers write, created since
// the last scan, shows at once. It costs a full scan (about 1 s of Redis
// time at 1M keys); Queues never does after the first listing.
func (i *Inspector) Rescan(ctx context.Context) ([]string, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	d := &i.disc
	d.scanMu.Lock()
	defer d.scanMu.Unlock()
	names, err := i.scanQueues(ctx)
	if err != nil {
		return nil, err
	}
	i.setDiscovered(names)
	i.publish(ctx, names)
	i.seedRegistry(ctx, names)
	return slices.Clone(names), nil
}

func (i *Inspector) publish(ctx context.Context, names []string) {
	if i.opts.DiscoveryInterval <= 0 {
		return
	}
	b, _ := json.Marshal(publishedQueues{At: time.Now().UnixMilli(), Queues: names})
	if err := i.rdb.Set(ctx, keys.Discovery(i.opts.Prefix), b, 3*i.opts.DiscoveryInterval).Err(); err != nil && ctx.Err() == nil {
		i.cacheWriteFailed(ctx, "publish discovered queues", err)
	}
}

// cacheWriteFailed logs a failed write of what a scan found (the published
// list, the registry). A Redis user that may not write (NOPERM: a
// read-only dashboard or CLI account) gets one Info line per Inspector:
// its listings work, each scanning again, and a warning on every CLI run
// told the operator of nothing to mend.
func (i *Inspector) cacheWriteFailed(ctx context.Context, what string, err error) {
	if outage.ReplyCode(err) != "NOPERM" {
		i.opts.Logger.WarnContext(ctx, what, slog.Any(logkey.Error, err))
		return
	}
	i.disc.readOnly.Do(func() {
		i.opts.Logger.InfoContext(ctx, "this Redis user may not write: queues found by a scan are not kept for the next listing, which scans again",
			slog.Any(logkey.Error, err))
	})
}

// startDiscovery starts the background loop once, unless the Inspector is
// closed or DiscoveryInterval is negative.
func (i *Inspector) startDiscovery() {
	d := &i.disc
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running || d.closed || i.opts.DiscoveryInterval < 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	d.running, d.stop, d.done, d.kick = true, stop, make(chan struct{}), make(chan struct{}, 1)
	go i.discover(ctx, d.done, d.kick)
}

// fullScanSpacing bounds the share of Redis time the background loop's
// full scans take: after a scan that took d, the next full scan waits at
// least fullScanSpacing×d (and one DiscoveryInterval). At 1M keys a scan
// takes about a second, so a dashboard in use scans every ~10 s instead
// of every interval (a third of a Redis core at a 3 s interval); in
// between, each round reads the registry and the worker connections
// (readRegistry without its scan step), which finds drover's queues and
// those Node workers run within one interval. A small keyspace scans every
// interval.
const fullScanSpacing = 10

func (i *Inspector) discover(ctx context.Context, done, kick chan struct{}) {
	defer close(done)
	ticker := time.NewTicker(i.opts.DiscoveryInterval)
	defer ticker.Stop()
	var nextFull time.Time // the first round scans
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			i.disc.mu.Lock()
			idle := time.Since(i.disc.used) > discoveryIdleRounds*i.opts.DiscoveryInterval
			i.disc.mu.Unlock()
			if idle {
				continue
			}
		case <-kick:
			// Used again after resting: what changed meanwhile may be a
			// queue only a full scan finds, and one runs now if the last
			// is fullScanSpacing of its durations ago. Each wake scanned
			// at once before, whatever the spacing: a dashboard polled
			// just past the idle bound scanned on every call (on a loaded
			// machine, 3 full scans in 2 s where the spacing allows 1).
		}
		i.disc.scanMu.Lock()
		var err error
		if start := time.Now(); !start.Before(nextFull) {
			var names []string
			var scanned bool
			if names, scanned, err = i.listQueues(ctx); err == nil {
				i.setDiscovered(names)
				if scanned {
					i.publish(ctx, names)
					i.seedRegistry(ctx, names)
				}
			}
			took := time.Since(start)
			nextFull = start.Add(max(i.opts.DiscoveryInterval, fullScanSpacing*took))
		} else if names, ok := i.readRegistry(ctx, false, nil); ok {
			i.setDiscovered(names)
			i.publish(ctx, names)
		} else {
			nextFull = time.Time{} // the registry is gone (FLUSHDB?): scan next round
		}
		i.disc.scanMu.Unlock()
		if err != nil && ctx.Err() == nil {
			i.opts.Logger.WarnContext(ctx, "discover queues", slog.Any(logkey.Error, err))
		}
	}
}

// Close stops the background discovery and waits for it until ctx is done.
// It is idempotent; the Inspector keeps working (Queues then scans on each
// call).
func (i *Inspector) Close(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	d := &i.disc
	d.mu.Lock()
	d.closed = true
	stop, done, running := d.stop, d.done, d.running
	d.running = false
	d.at = time.Time{}
	d.mu.Unlock()
	if !running {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close inspector: %w", context.Cause(ctx))
	}
}

// listQueues lists the queues by a full scan (scanned true), or, on a
// Redis that refuses SCAN (an error reply other than an outage's: NOPERM
// from an ACL, an unknown command where a managed service renamed it), from
// the registry and the worker connections (readRegistry, seeded or not):
// the queues drover writes and those a worker runs, not one only Node
// producers write. The first refusal is logged once, as a warning; SCAN is
// not sent again by this Inspector's listings. Rescan still scans, and
// returns the refusal.
func (i *Inspector) listQueues(ctx context.Context) (names []string, scanned bool, err error) {
	if !i.disc.scanRefused.Load() {
		names, err = i.scanQueues(ctx)
		if err == nil {
			return names, true, nil
		}
		if ctx.Err() != nil || outage.Is(err) || outage.ReplyCode(err) == "" {
			return nil, false, err
		}
		if i.disc.scanRefused.CompareAndSwap(false, true) {
			i.opts.Logger.WarnContext(ctx, "Redis refuses SCAN: queues are listed from drover's registry and the workers' connections, "+
				"so a queue only Node producers write is not listed", slog.Any(logkey.Error, err))
		}
	}
	if names, ok := i.readRegistry(ctx, false, nil); ok {
		return names, false, nil
	}
	if err == nil {
		err = errors.New("read the queue registry")
	}
	return nil, false, fmt.Errorf("list queues under prefix %q: Redis refuses SCAN and the registry did not answer: %w", i.opts.Prefix, err)
}

// scanQueues scans the keyspace for queue keys.
func (i *Inspector) scanQueues(ctx context.Context) ([]string, error) {
	pattern := keys.ScanPattern(i.opts.Prefix)
	seen := make(map[string]bool)
	var mu sync.Mutex
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		iter := c.Scan(ctx, 0, pattern, 5000).Iterator()
		for iter.Next(ctx) {
			if name, ok := keys.QueueOf(i.opts.Prefix, iter.Val()); ok {
				mu.Lock()
				seen[name] = true
				mu.Unlock()
			}
		}
		return iter.Err()
	}
	var err error
	if cc, ok := i.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, i.rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("scan queues under prefix %q: %w", i.opts.Prefix, err)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		if keys.ValidateName(n) == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Exists reports whether queue has any of its own keys. Queues in the
// discovery cache answer without I/O; others cost one round trip.
func (i *Inspector) Exists(ctx context.Context, queue string) (bool, error) {
	if ctx == nil {
		return false, errNilContext
	}
	if err := keys.ValidateName(queue); err != nil {
		return false, nil //nolint:nilerr // an invalid name names no queue
	}
	d := &i.disc
	d.mu.Lock()
	known := d.set[queue]
	d.mu.Unlock()
	if known {
		return true, nil
	}
	names := i.keys(queue).QueueKeys()
	cmds := make([]*redis.IntCmd, len(names))
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, k := range names {
			cmds[n] = p.Exists(ctx, k)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("look up queue %q: %w", queue, err)
	}
	for _, c := range cmds {
		if c.Val() > 0 {
			return true, nil
		}
	}
	return false, nil
}

// existing returns the handle of queue, or an error wrapping
// ErrQueueNotFound when it does not exist. Nothing is cached for a queue
// that does not exist.
func (i *Inspector) existing(ctx context.Context, queue string) (*drover.Queue, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	ok, err := i.Exists(ctx, queue)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no queue %q under prefix %q%s", ErrQueueNotFound, queue, i.opts.Prefix, i.knownQueues(ctx))
	}
	return i.Queue(queue)
}

// knownQueuesShown bounds the names an unknown-queue error lists.
const knownQueuesShown = 20

// knownQueues renders "; known queues: a, b" for an unknown-queue error, so
// a typo is found at once ("" when discovery fails or finds none).
func (i *Inspector) knownQueues(ctx context.Context) string {
	names, err := i.Queues(ctx)
	if err != nil || len(names) == 0 {
		return "; there is no queue under this prefix"
	}
	more := ""
	if len(names) > knownQueuesShown {
		more = fmt.Sprintf(" and %d more", len(names)-knownQueuesShown)
		names = names[:knownQueuesShown]
	}
	return "; known queues: " + strings.Join(names, ", ") + more
}
