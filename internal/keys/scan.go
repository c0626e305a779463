package keys

import "strings"

// queueSuffixes are the suffixes of the keys a BullMQ queue keeps for as long
// as it has jobs or settings. Any one of them shows the queue exists.
var queueSuffixes = map[string]bool{
	"meta": true, "id": true, "wait": true, "active": true, "prioritized": true, "delayed": true,
	"completed": true, "failed": true, "paused": true, "waiting-children": true, "events": true,
	"stalled-check": true, "marker": true, "pc": true, "limiter": true, "repeat": true,
}

// QueueKeys are the queue's own keys (see QueueOf): while any exists, the
// queue does.
func (q Queue) QueueKeys() []string {
	out := make([]string, 0, len(queueSuffixList))
	for _, s := range queueSuffixList {
		out = append(out, q.base+s)
	}
	return out
}

var queueSuffixList = []string{
	"meta", "id", "wait", "active", "prioritized", "delayed", "completed", "failed", "paused",
	"waiting-children", "events", "stalled-check", "marker", "pc", "limiter", "repeat",
}

// Discovery is the key where an Inspector publishes the queues it found
// under prefix ("" = DefaultPrefix); an empty queue name, so no queue.
func Discovery(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "::queues"
}

// Registry is the set of queue names under prefix ("" = DefaultPrefix)
// that drover producers and workers add their queue's name to (once per
// Queue handle), so a cold listing need not scan the keyspace. Node BullMQ
// does not write it; see RegistrySeeded.
func Registry(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "::registry"
}

// RegistrySeeded exists (no TTL; its value is the scan's time in ms) once a
// full keyspace scan added every queue it found to Registry, Node's
// included: a cold listing trusts Registry only then.
func RegistrySeeded(prefix string) string { return Registry(prefix) + ":seeded" }

// RegistryCursors is the hash of SCAN cursors (by master address) of the
// step each cold listing scans to find queues only Node writes.
func RegistryCursors(prefix string) string { return Registry(prefix) + ":cursors" }

// ScanPattern is the SCAN MATCH pattern of every key under prefix ("" =
// DefaultPrefix), with the prefix's glob characters escaped.
func ScanPattern(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return escapeGlob(prefix) + ":*"
}

// escapeGlob escapes the characters SCAN MATCH reads as glob syntax.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// QueueOf reports the queue a key found under prefix belongs to, when the key
// is one of a queue's own keys ("<prefix>:<queue>:<suffix>", such as meta, id,
// wait or events). Job hashes, logs and locks report false.
func QueueOf(prefix, key string) (string, bool) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	rest, ok := strings.CutPrefix(key, prefix+":")
	if !ok {
		return "", false
	}
	name, suffix, ok := strings.Cut(rest, ":")
	if !ok || name == "" || !queueSuffixes[suffix] {
		return "", false
	}
	return name, true
}
