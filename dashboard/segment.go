package dashboard

import (
	"net/http"
	"strings"
)

// A path segment of "." or ".." never reaches the server: HTTP clients and
// browsers remove it (RFC 3986's dot segments; the URL standard removes its
// %2e spellings too). BullMQ accepts both as queue names and job ids, so the
// API reads a segment of tildes followed by one or two dots as an escape: a
// leading "~" is dropped ("~." is ".", "~.." is "..", "~~." is "~."). Any
// other segment is the name as it is.

// pathNames are the route wildcards that carry a queue name or an id.
var pathNames = []string{"queue", "id", "scheduler"}

// unescapeSegment undoes the escape of a dot segment.
func unescapeSegment(s string) string {
	rest := strings.TrimLeft(s, "~")
	if len(rest) < len(s) && (rest == "." || rest == "..") {
		return s[1:]
	}
	return s
}

// unescapePath sets the route's names to what the segments spell.
func unescapePath(r *http.Request) {
	for _, name := range pathNames {
		if v := r.PathValue(name); v != "" {
			r.SetPathValue(name, unescapeSegment(v))
		}
	}
}
