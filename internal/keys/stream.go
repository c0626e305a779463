package keys

import (
	"strconv"
	"strings"
)

// StreamReadID reports whether id is one XREAD reads the events stream
// after: "$" (the newest entry), or a stream id, whole ("<ms>-<seq>") or its
// time alone ("<ms>", sequence 0). QueueEvents' LastEventID and the CLI's
// watch --from are checked with it before Redis is asked.
func StreamReadID(id string) bool {
	if id == "$" {
		return true
	}
	ms, seq, whole := strings.Cut(id, "-")
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil {
		return false
	}
	if !whole {
		return true
	}
	_, err := strconv.ParseUint(seq, 10, 64)
	return err == nil
}
