package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryCommandHelp: `drover <command> -h` and `--help` print the
// command's usage on stdout and succeed, for every command an operator
// finds in `drover help`, and a flag the command does not have is a usage
// error (exit code 2) that names it.
func TestEveryCommandHelp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, sub := range []string{"upsert", "remove"} {
		var out bytes.Buffer
		require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"scheduler", sub, "-h"}))
		require.Contains(t, out.String(), "Usage: drover scheduler "+sub)
	}
	for _, name := range names {
		if name == "lab" {
			continue // only in -tags lab builds; TestLab covers it
		}
		for _, help := range []string{"-h", "--help"} {
			var out, errOut bytes.Buffer
			err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, []string{name, help})
			require.NoError(t, err, "drover %s %s: %s", name, help, errOut.String())
			require.Contains(t, out.String(), "Usage: drover "+name, "drover %s %s", name, help)
		}
		args := []string{name, "--no-such-flag"}
		if name == "scheduler" {
			args = []string{name, "upsert", "--no-such-flag"}
		}
		var out, errOut bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, args)
		var ue *usageError
		require.True(t, errors.As(err, &ue), "drover %s --no-such-flag: a usage error (exit 2), got %v", name, err)
		require.Contains(t, err.Error(), "no-such-flag", name)
	}
}
