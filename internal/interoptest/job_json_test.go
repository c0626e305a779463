package interoptest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// jobJSONShared are the keys of BullMQ's job JSON (JSON.stringify of a
// BullMQ 6.7 Job) that `drover job --json` prints too: same name, same
// value, instants in epoch ms.
var jobJSONShared = []string{
	"id", "name", "data", "opts", "progress", "returnvalue", "stacktrace", "delay", "priority",
	"attemptsMade", "attemptsStarted", "stalledCounter", "timestamp", "processedOn", "finishedOn",
	"failedReason", "processedBy", "deduplicationId", "repeatJobKey", "parentKey",
}

// summaryJSONShared are those that `drover jobs --json` prints per job.
var summaryJSONShared = []string{
	"id", "name", "progress", "attemptsMade", "attemptsStarted", "stalledCounter",
	"timestamp", "processedOn", "finishedOn", "failedReason", "processedBy",
}

// TestInteropJobJSON is issue 10 item 10's differential test: Node BullMQ
// adds and processes jobs into several states, and for each job the drover
// CLI's `job --json` (and its row in `jobs --json`) must carry the value
// Node's JSON.stringify(job) has for every key the two share. Before drover
// used BullMQ's names and epoch-ms instants it printed `created` (an RFC 3339
// string) for `timestamp`, `stalledCount` for `stalledCounter`,
// `returnValue` for `returnvalue`, RFC 3339 strings for processedOn and
// finishedOn, and attemptsMade/attemptsStarted only inside `budget`.
func TestInteropJobJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := buildDroverCLI(t)
	b := newSetup(t)(t)
	o := b.oracle

	work := func(queue string, bh bullmqoracle.Behavior) string {
		t.Helper()
		for end := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
			id, err := o.StepWork(ctx, b.prefix, queue, bh)
			require.NoError(t, err)
			if id != "" {
				return id
			}
			require.True(t, time.Now().Before(end), "no job of %s became ready", queue)
		}
	}
	add := func(queue, name string, data any, opts map[string]any) string {
		t.Helper()
		id, err := o.Add(ctx, b.prefix, queue, name, data, opts)
		require.NoError(t, err)
		return id
	}

	// Each job in its own queue: the step worker takes exactly it.
	jobs := map[string]string{} // queue -> id
	jobs["completed"] = add("completed", "send", map[string]any{"to": "ada", "n": 1}, map[string]any{"attempts": 2})
	work("completed", bullmqoracle.Return(map[string]any{"ok": true, "list": []any{1, "a"}}))

	jobs["progress"] = add("progress", "report", map[string]any{"rows": 3}, nil)
	then := bullmqoracle.Return("done")
	work("progress", bullmqoracle.Progress(map[string]any{"done": 2, "of": 3}, &then))

	// Two failures with a fixed backoff of 1 ms: failed for good, two traces.
	jobs["failed"] = add("failed", "charge", map[string]any{"card": "x"},
		map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 1}})
	work("failed", bullmqoracle.Fail("card declined"))
	work("failed", bullmqoracle.Fail("card declined again"))

	// One failure with an exponential backoff of a minute: waiting for it.
	jobs["backoff"] = add("backoff", "sync", map[string]any{}, map[string]any{"attempts": 3, "priority": 4,
		"backoff": map[string]any{"type": "exponential", "delay": 60000}})
	work("backoff", bullmqoracle.Fail("upstream timeout"))

	jobs["delayed"] = add("delayed", "remind", "later", map[string]any{"delay": 3_600_000, "jobId": "r-1"})

	// Taken, its lock lost, recovered by two stalled checks: back in wait
	// with stalledCounter 1.
	jobs["stalled"] = add("stalled", "crunch", map[string]any{"big": true}, nil)
	took, err := o.StepTake(ctx, b.prefix, "stalled")
	require.NoError(t, err)
	require.Equal(t, jobs["stalled"], took)
	k := keys.New(b.prefix, "stalled")
	require.NoError(t, b.rdb.Del(ctx, k.Lock(took)).Err())
	for range 2 {
		require.NoError(t, b.rdb.Del(ctx, k.StalledCheck()).Err()) // each check a new interval
		_, err := o.StepCheckStalled(ctx, b.prefix, "stalled")
		require.NoError(t, err)
	}

	states := map[string]string{"completed": "completed", "progress": "completed", "failed": "failed",
		"backoff": "delayed", "delayed": "delayed", "stalled": "waiting"}
	for queue, id := range jobs {
		t.Run(queue, func(t *testing.T) {
			state, err := o.GetState(ctx, b.prefix, queue, id)
			require.NoError(t, err)
			require.Equal(t, states[queue], state)
			node, err := o.GetJobJSON(ctx, b.prefix, queue, id)
			require.NoError(t, err)
			require.NotNil(t, node)

			var detail map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(runDroverCLI(t, bin, b.addr, b.prefix, "job", queue, id, "--json"), &detail))
			requireSharedKeys(t, node, detail, jobJSONShared)

			var pages []struct {
				Jobs []map[string]json.RawMessage `json:"jobs"`
			}
			require.NoError(t, json.Unmarshal(runDroverCLI(t, bin, b.addr, b.prefix, "jobs", queue, "--state", state, "--json"), &pages))
			require.Len(t, pages, 1)
			require.Len(t, pages[0].Jobs, 1)
			requireSharedKeys(t, node, pages[0].Jobs[0], summaryJSONShared)
		})
	}
	// The states the jobs are in carry what the test is about.
	t.Run("Coverage", func(t *testing.T) {
		for queue, key := range map[string]string{"completed": "returnvalue", "progress": "progress", "failed": "stacktrace",
			"backoff": "failedReason", "delayed": "delay", "stalled": "stalledCounter"} {
			node, err := o.GetJobJSON(ctx, b.prefix, queue, jobs[queue])
			require.NoError(t, err)
			require.Contains(t, node, key)
			require.NotContains(t, []string{"null", "0", "[]", `""`}, string(node[key]), "%s of the %s job", key, queue)
		}
	})
}

// requireSharedKeys requires drover's JSON to carry Node's value for each
// of keys, and lists every key that does not. A key Node omits (undefined)
// drover omits too. Node has defaults for what a job never had, where
// drover omits the key: returnvalue null (no return value yet) and progress
// 0 (never reported); only these count as absent.
func requireSharedKeys(t *testing.T, node, drover map[string]json.RawMessage, keys []string) {
	t.Helper()
	var differ []string
	for _, k := range keys {
		nv, inNode := node[k]
		dv, inDrover := drover[k]
		switch {
		case inNode && !inDrover && ((k == "returnvalue" && string(nv) == "null") || (k == "progress" && string(nv) == "0")):
		case inNode != inDrover:
			differ = append(differ, fmt.Sprintf("%s: Node %s, drover %s", k, orAbsent(nv, inNode), orAbsent(dv, inDrover)))
		case inNode && !jsonEqual(nv, dv):
			differ = append(differ, fmt.Sprintf("%s: Node %s, drover %s", k, nv, dv))
		}
	}
	require.Empty(t, differ, "keys of BullMQ's job JSON whose values differ")
}

func orAbsent(v json.RawMessage, present bool) string {
	if !present {
		return "absent"
	}
	return string(v)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// buildDroverCLI builds the drover command once for the test.
func buildDroverCLI(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command builds the drover CLI")
	bin := filepath.Join(t.TempDir(), "drover")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/seed40057009/drover/cmd/drover").CombinedOutput()
	require.NoError(t, err, "go build ./cmd/drover: %s", out)
	return bin
}

// runDroverCLI runs the drover command against the test's Redis and prefix
// and returns its stdout.
func runDroverCLI(t *testing.T, bin, addr, prefix string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--redis", "redis://"+addr, "--prefix", prefix)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "drover %v: %s%s", args, stdout.String(), stderr.String())
	return stdout.Bytes()
}
