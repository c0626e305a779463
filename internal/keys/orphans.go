package keys

import "strings"

// JobScanPattern is the SCAN MATCH pattern of every key of the queue, with
// the glob characters of its prefix and name escaped.
func (q Queue) JobScanPattern() string { return escapeGlob(q.base) + "*" }

// notJobIDs are first segments of the queue's keys that name no job: the
// queue keys of BullMQ's key map, the key families under a queue
// ("de:<id>", "dn:<id>", "repeat:<id>" and scheduler runs
// "repeat:<id>:<ms>", "metrics:<kind>", drover's "marker:<worker>"), and
// the names ValidateJobID refuses.
var notJobIDs = map[string]bool{
	"de": true, "dn": true, "drover": true,
}

func init() {
	for s := range queueSuffixes {
		notJobIDs[s] = true
	}
	for s := range reservedIDs {
		notJobIDs[s] = true
	}
}

// jobSubKeys are the suffixes of the keys next to a job hash (see Lock,
// Logs, Dependencies, Processed, IgnoredFailures, Unsuccessful).
var jobSubKeys = map[string]bool{
	"lock": true, "logs": true, "dependencies": true, "processed": true, "failed": true, "unsuccessful": true,
}

// JobIDOfKey reports the job a key of the queue belongs to: "<base><id>"
// or "<base><id>:<sub>" with sub one of a job's own keys. Queue keys and
// the key families under the queue report false, as do ids with a ':'
// (only scheduler runs have one, and they live under "repeat:").
func (q Queue) JobIDOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, q.base)
	if !ok {
		return "", false
	}
	id, sub, hasSub := strings.Cut(rest, ":")
	if id == "" || notJobIDs[id] || (hasSub && !jobSubKeys[sub]) {
		return "", false
	}
	return id, true
}
