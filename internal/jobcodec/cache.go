package jobcodec

import (
	"strings"
	"sync"
)

// optsCache memoises DecodeOpts by the raw opts text. Most queues add jobs
// with a handful of distinct option sets, and decoding opts is most of the
// cost of decoding a job hash on the fetch path. Cached values share their
// pointers and maps: callers treat Record.Opts as read-only.
var optsCache = struct {
	sync.RWMutex
	m map[string]Opts
}{m: make(map[string]Opts)}

// optsCacheMax bounds the cache; it is emptied when full (cheap, and a
// workload with unique opts per job gains nothing from keeping them).
const optsCacheMax = 4096

// optsCacheMaxLen skips caching unusually long opts texts.
const optsCacheMaxLen = 512

func decodeOptsCached(raw string) (Opts, error) {
	if len(raw) > optsCacheMaxLen || perJob(raw) {
		return DecodeOpts(raw)
	}
	optsCache.RLock()
	o, ok := optsCache.m[raw]
	optsCache.RUnlock()
	if ok {
		return o, nil
	}
	o, err := DecodeOpts(raw)
	if err != nil {
		return o, err
	}
	optsCache.Lock()
	if len(optsCache.m) >= optsCacheMax {
		optsCache.m = make(map[string]Opts)
	}
	optsCache.m[raw] = o
	optsCache.Unlock()
	return o, nil
}

// perJob reports that an opts text names something of its own job, a
// custom id or a deduplication id, so no other job shares it: caching it
// would cost a map insert (and the collector's work on entries nobody
// reads again) for nothing.
func perJob(raw string) bool {
	return strings.Contains(raw, `"jobId":`) || strings.Contains(raw, `"de":`)
}
