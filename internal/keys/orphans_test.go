package keys

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJobIDOfKey(t *testing.T) {
	q := New("bull", "mail")
	for key, want := range map[string]string{
		"bull:mail:1":                   "1",
		"bull:mail:abc":                 "abc",
		"bull:mail:1:logs":              "1",
		"bull:mail:7:lock":              "7",
		"bull:mail:p:dependencies":      "p",
		"bull:mail:p:processed":         "p",
		"bull:mail:p:failed":            "p",
		"bull:mail:p:unsuccessful":      "p",
		"bull:mail:wait":                "",
		"bull:mail:meta":                "",
		"bull:mail:waiting-children":    "",
		"bull:mail:de:x":                "",
		"bull:mail:dn:logs":             "",
		"bull:mail:repeat:s:1700000000": "",
		"bull:mail:repeat:s":            "",
		"bull:mail:metrics:completed":   "",
		"bull:mail:marker:w1":           "",
		"bull:mail:1:other":             "",
		"bull:mail:":                    "",
		"bull:mail2:1":                  "",
		"bull:other:1":                  "",
	} {
		id, ok := q.JobIDOfKey(key)
		require.Equal(t, want != "", ok, key)
		require.Equal(t, want, id, key)
	}
}

func TestJobScanPattern(t *testing.T) {
	require.Equal(t, `bull:mail:*`, New("", "mail").JobScanPattern())
	require.Equal(t, `{t\*}:q\[1\]:*`, New("{t*}", "q[1]").JobScanPattern())
}
