//go:build lab

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/lab"
)

func TestLab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	run := func(t *testing.T, args ...string) (string, string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, append([]string{"lab"}, args...))
		return out.String(), errOut.String(), err
	}

	// What a fresh machine runs: no Redis, no database given.
	t.Run("EmbeddedEngineAndSQLite", func(t *testing.T) {
		t.Parallel()
		out, _, err := run(t)
		require.NoError(t, err, out)
		require.Contains(t, out, "embedded Redis-compatible engine")
		require.Contains(t, out, "database: SQLite ")
		want := []string{
			`throw-after-effect\s+unsafe\s+2\s+2\s+0\s+2\s+0\s+1\s+ok: duplicate effect reproduced \(2x\)`,
			`throw-after-effect\s+safe\s+2\s+1\s+1\s+2\s+0\s+1\s+ok: effect once`,
			`killed-after-effect\s+unsafe\s+2\s+2\s+0\s+1\s+1\s+1\s+ok: duplicate effect reproduced \(2x\)`,
			`killed-after-effect\s+safe\s+2\s+1\s+1\s+1\s+1\s+1\s+ok: effect once`,
			`duplicate-producer\s+unsafe\s+2\s+2\s+0\s+2\s+0\s+2\s+ok: duplicate effect reproduced \(2x\)`,
			`duplicate-producer\s+safe\s+1\s+1\s+0\s+1\s+0\s+1\s+ok: one job, effect once`,
		}
		for _, w := range want {
			require.Regexp(t, regexp.MustCompile(w), out)
		}
		require.NotContains(t, out, "FAIL")
	})

	t.Run("RealRedisAndPostgresJSON", func(t *testing.T) {
		t.Parallel()
		out, _, err := run(t, "--redis", "redis://"+redistest.Shared(t).Addr, "--database", pgtest.DSN(t),
			"--prefix", redistest.UniquePrefix(), "--json")
		require.NoError(t, err, out)
		var report lab.Report
		require.NoError(t, json.Unmarshal([]byte(out), &report), "stdout is only JSON")
		require.True(t, report.OK)
		require.Equal(t, "postgres", report.Database)
		require.Len(t, report.Results, 6)
		for _, res := range report.Results {
			require.Equal(t, lab.Expect(res.Scenario, res.Safe), lab.Expectation{
				Executions: res.Executions, Effects: res.Effects, AttemptsMade: res.AttemptsMade,
				StalledCount: res.StalledCount, JobsCreated: res.JobsCreated,
			}, "%s/%s", res.Scenario, res.Mode)
			if res.Scenario == lab.KilledAfterEffect {
				require.Equal(t, "signal: killed", res.WorkerExit)
			}
		}
	})

	// The lab can fail: with the safe processor sabotaged, drover lab exits 1.
	t.Run("SabotagedExitsNonZero", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "lab", "--sabotage", "--scenario", "throw-after-effect,killed-after-effect",
			"--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", redistest.UniquePrefix())
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "want a non-zero exit, got %v; stdout:\n%s", err, out.String())
		require.Equal(t, 1, exit.ExitCode())
		require.Equal(t, "drover: lab: 2 of 4 runs did not show what they should\n", errOut.String())
		require.Regexp(t, `throw-after-effect\s+sabotaged\s+2\s+2 \(want 1\).*FAIL: effect written 2 times by a safe subject`, out.String())
		require.Regexp(t, `killed-after-effect\s+sabotaged\s+2\s+2 \(want 1\).*FAIL: effect written 2 times by a safe subject`, out.String())
		require.Regexp(t, `throw-after-effect\s+unsafe\s+.*ok: duplicate effect reproduced`, out.String())
	})

	t.Run("Verbose", func(t *testing.T) {
		t.Parallel()
		out, errOut, err := run(t, "-v", "--scenario", "killed-after-effect", "--redis", "redis://"+redistest.Shared(t).Addr,
			"--prefix", redistest.UniquePrefix())
		require.NoError(t, err, out)
		// Both processes log: the killed one wrote the effect and never
		// finished; this one ran the recovered job.
		pids := map[string]bool{}
		for line := range strings.Lines(errOut) {
			if strings.Contains(line, `msg="processor start"`) && strings.Contains(line, "queue=lab-") {
				pids[regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(line)[1]] = true
			}
		}
		require.Len(t, pids, 3, "two killed worker processes and this one:\n%s", errOut)
		require.Contains(t, errOut, `msg="lab worker: effect written, waiting to be killed before acknowledging"`)
		require.Contains(t, errOut, `msg="job stalled: moved back to wait"`)
		require.Regexp(t, `msg="processor finish" .*op_key=drover-lab:\w+:killed-after-effect:safe:order-42 attempt=2 pid=\d+ claim=existed effect=false outcome=ok`, errOut)
	})

	t.Run("UsageErrors", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			args []string
			err  string
		}{
			{"UnknownScenario", []string{"--scenario", "nope"},
				`lab: --scenario: lab: unknown scenario "nope" (want throw-after-effect, killed-after-effect or duplicate-producer)`},
			{"OtherDatabase", []string{"--database", "mysql://localhost/x"},
				`lab: --database "mysql://localhost/x": want a postgres:// URL or file:PATH (SQLite)`},
			{"ExtraArgument", []string{"now"}, `lab: unexpected arguments ["now"]`},
			{"WorkerWithoutSpec", []string{"worker"},
				"lab worker: --redis, --database and --spec are required (this command is started by drover lab)"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				_, _, err := run(t, tt.args...)
				var usage *usageError
				require.ErrorAs(t, err, &usage)
				require.EqualError(t, err, tt.err)
			})
		}
	})

	t.Run("Help", func(t *testing.T) {
		t.Parallel()
		out, _, err := run(t, "-h")
		require.NoError(t, err)
		require.Contains(t, out, "Usage: drover lab [flags]")
		require.Contains(t, out, "-sabotage")
	})
}
