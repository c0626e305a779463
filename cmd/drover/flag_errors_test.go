package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadFlagValueWritesNothingToStdout: a bad flag (unknown, or a value
// the flag refuses) had the flag package print its error and the whole
// usage to stdout, so `drover jobs q --json --limit x > jobs.json` wrote
// the usage into jobs.json and said the error twice. Only the one-line
// error on stderr says it now (exit 2), and it says what the flag takes:
// the package's refusals of a number, a boolean or a duration said only
// "parse error" (`--timeout 5`: invalid value "5" for flag -timeout:
// parse error). -h still prints the usage on stdout. Runs the binary.
func TestBadFlagValueWritesNothingToStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"jobs", "q", "--json", "--limit", "x"}, `drover: jobs: invalid value "x" for flag -limit: want a whole number`},
		{[]string{"queues", "--json=maybe"}, `drover: queues: invalid value "maybe" for flag -json: want true or false (or the flag alone)`},
		{[]string{"queues", "--timeout", "5"}, `drover: queues: invalid value "5" for flag -timeout: want a duration with its unit, such as 5s or 5ms`},
		{[]string{"failures", "q", "--since", "yesterday"}, `drover: failures: invalid value "yesterday" for flag -since: want a duration such as 30s, 1m30s or 500ms`},
		{[]string{"demo", "--for", "1x"}, `drover: demo: invalid value "1x" for flag -for: want a duration such as 30s, 1m30s or 500ms`},
		{[]string{"queues", "--bogus"}, `drover: queues: flag provided but not defined: -bogus`},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), "DROVER_TEST_MAIN=1", "DROVER_REDIS_URL=redis://127.0.0.1:1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%v %v", tc.args, err)
		require.Equal(t, 2, exit.ExitCode(), tc.args)
		require.Empty(t, stdout.String(), tc.args)
		require.Equal(t, tc.err+"\n", stderr.String(), tc.args)
	}
	var out bytes.Buffer
	require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(context.Background(), []string{"queues", "-h"}))
	require.Contains(t, out.String(), "Usage: drover queues")
	require.Contains(t, out.String(), "  -timeout duration\n")
}
