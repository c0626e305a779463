package keys

import (
	"fmt"
	"strings"
)

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

// keyFamilies are the first segments of the key families under a queue
// that hold no job: deduplication ids ("de:<id>", "dn:<id>"), metrics
// ("metrics:<kind>[:data]") and worker wake-ups ("marker:<worker>"), whose
// ids may hold ':' themselves, as ValidateJobID refuses them for new jobs.
// drover's call records ("add:<token>", "call:<token>") have one ':' only
// (recordFamilies): a 3-part id such as "add:a:b" is a job BullMQ accepts.
var keyFamilies = map[string]bool{"de": true, "dn": true, "metrics": true, "marker": true}

var recordFamilies = map[string]bool{"add": true, "call": true}

// CheckStoredJobID reports whether id may name a job already stored, by
// either side, when a call is handed an id rather than a job it listed:
// the job hash "<base><id>" must not be one of the queue's own keys (its
// wait list, meta hash, a job scheduler's "repeat:<id>", a job's
// "<id>:logs", ...), or the call would read or write that key as if it
// were a job. It is looser than ValidateJobID, which rules new ids: the
// ids BullMQ accepts (integers, "." and the legacy names ValidateJobID
// also refuses) pass, so a job Node stored can always be reached, and so
// does "", which names no key (callers answer it as a missing job).
func CheckStoredJobID(id string) error {
	// No allocation on the way through: it runs before every job write,
	// a processor's UpdateProgress and Log included.
	colons := strings.Count(id, ":")
	if colons == 0 {
		if queueSuffixes[id] || id == "stalled" {
			return fmt.Errorf("job id %q names the queue's %s key, not a job", id, id)
		}
		return nil
	}
	first, _, _ := strings.Cut(id, ":")
	owner, last := id[:strings.LastIndexByte(id, ':')], id[strings.LastIndexByte(id, ':')+1:]
	switch {
	case keyFamilies[first], colons == 1 && recordFamilies[first]:
		return fmt.Errorf("job id %q names a %s: key of the queue, not a job", id, first)
	case colons == 1 && first == "repeat":
		return fmt.Errorf("job id %q names job scheduler %q, not a job (its runs are repeat:<scheduler>:<ms>)", id, last)
	case colons != 2 && jobSubKeys[last]:
		return fmt.Errorf("job id %q names the %s key of job %q, not a job", id, last, owner)
	}
	return nil
}
