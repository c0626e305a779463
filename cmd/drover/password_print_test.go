package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedisPasswordNeverPrinted: `drover <command> -h` showed the --redis
// default, DROVER_REDIS_URL's value, password and all ((default
// "redis://admin:s3cret@host:6379/0")), and a --redis the command refused
// was quoted whole in the error (`--redis "redis://u:s3cret@host:abc":
// parse "redis://u:s3cret@host:abc": invalid port`), so pasting help or an
// error into an issue published the password. Both show "xxxxx" now. Runs
// the binary (the default is read from the environment).
func TestRedisPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		args []string
	}{
		{"redis://admin:s3cret@127.0.0.1:1/0", []string{"jobs", "-h"}},
		{"redis://admin:s3cret@127.0.0.1:1/0", []string{"dashboard", "-h"}},
		{"redis://admin:s3cret@127.0.0.1:1/0", []string{"demo", "-h"}},
		{"redis://127.0.0.1:1/0?master_name=m&password=s3cret", []string{"queues", "-h"}},
		{"", []string{"queues", "--redis", "redis://u:s3cret@127.0.0.1:abc"}},
		{"", []string{"queues", "--redis", "redis://:s3cret@127.0.0.1:99999/0"}},
		{"", []string{"queues", "--redis", "redis://:s3cret@127.0.0.1:1/0?master_name=m&bogus=1"}},
		{"", []string{"demo", "--redis", "redis://u:s3cret@127.0.0.1:abc"}},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), "DROVER_TEST_MAIN=1", "DROVER_REDIS_URL="+tc.env)
		out, _ := cmd.CombinedOutput()
		require.NotContains(t, string(out), "s3cret", "%s %v", tc.env, tc.args)
		require.Contains(t, string(out), "xxxxx", "%s %v: %s", tc.env, tc.args, out)
		require.True(t, strings.Contains(string(out), "--redis") || strings.Contains(string(out), "-redis"), "%s", out)
	}
}
