package drover_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// send stands for the application's work in the README's snippet.
func send(_ context.Context, job *drover.Job) (any, error) {
	var msg struct{ To string }
	if err := job.DecodeData(&msg); err != nil {
		return nil, drover.Unrecoverable(err)
	}
	return "sent to " + msg.To, nil
}

// readme is the README's "Using it" snippet, as it is there.
func readme(ctx context.Context, rdb redis.UniversalClient) error {
	q, err := drover.NewQueue(rdb, "emails", nil)
	if err != nil {
		return err
	}
	res, err := q.Add(ctx, "welcome", map[string]string{"to": "ada@example.com"},
		&drover.JobOptions{Attempts: 5, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: time.Second, Jitter: 0.2}})
	if err != nil {
		return err
	}
	fmt.Println(res.Outcome) // AddCreated; or AddDuplicate (custom JobID exists), AddDeduplicated, AddReAdded

	w, err := drover.NewWorker(rdb, "emails", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		return send(ctx, job) // an error retries; drover.Unrecoverable(err) fails for good
	}), &drover.WorkerOptions{Concurrency: 50})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() {
		// Close stops fetching and waits for running jobs until its context
		// ends, then requeues the rest: give it a deadline, so a stuck job
		// cannot keep the shutdown waiting forever.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	}()

	waitForState(q, res.Job.ID, drover.StateCompleted)
	job, err := q.GetJob(ctx, res.Job.ID)
	if err != nil {
		return err
	}
	fmt.Println(string(job.ReturnValue))
	return nil
}

// The README's snippet, run: it uses the default "bull" prefix, which no
// other test of this package uses.
func Example_readme() {
	rdb, _ := exampleClient()
	defer rdb.Close()
	if err := readme(context.Background(), rdb); err != nil {
		panic(err)
	}
	// Output:
	// created
	// "sent to ada@example.com"
}

// TestREADMESnippets: every Go snippet of README.md is, line for line
// (indentation aside), in an example of this package, so it compiles and
// runs.
func TestREADMESnippets(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var examples strings.Builder
	files, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasPrefix(f.Name(), "example_") && strings.HasSuffix(f.Name(), "_test.go") {
			b, err := os.ReadFile(f.Name())
			require.NoError(t, err)
			examples.WriteString(normalize(string(b)))
		}
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		require.Contains(t, examples.String(), normalize(b[1]), "README snippet not in an example_*_test.go:\n%s", b[1])
	}
}

// normalize drops each line's indentation and blank lines.
func normalize(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}
