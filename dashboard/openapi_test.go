package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// schemaChecker validates JSON values against the JSON Schema subset the
// OpenAPI document uses: $ref, type, properties, required,
// additionalProperties false, items, enum, anyOf, format date-time.
type schemaChecker struct {
	schemas map[string]any
}

func (c *schemaChecker) check(path string, schema map[string]any, v any) error {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		s, ok := c.schemas[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: unknown $ref %s", path, ref)
		}
		return c.check(path, s, v)
	}
	if alts, ok := schema["anyOf"].([]any); ok {
		var errs []error
		for _, alt := range alts {
			err := c.check(path, alt.(map[string]any), v)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		return fmt.Errorf("%s: matches no alternative: %w", path, errors.Join(errs...))
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
	}
	typ, _ := schema["type"].(string)
	switch typ {
	case "":
		return nil // any value
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string, got %T %v", path, v, v)
		}
		if schema["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return fmt.Errorf("%s: %q is not a date-time", path, s)
			}
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != float64(int64(n)) {
			return fmt.Errorf("%s: want an integer, got %T %v", path, v, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: want a number, got %T %v", path, v, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want a boolean, got %T %v", path, v, v)
		}
	case "null":
		if v != nil {
			return fmt.Errorf("%s: want null, got %v", path, v)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %T %v", path, v, v)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for k, e := range a {
				if err := c.check(fmt.Sprintf("%s[%d]", path, k), items, e); err != nil {
					return err
				}
			}
		}
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %T %v", path, v, v)
		}
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asStrings(schema["required"]) {
			if _, ok := o[r]; !ok {
				return fmt.Errorf("%s: required field %q missing", path, r)
			}
		}
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					return fmt.Errorf("%s: field %q is not in the document", path, k)
				}
				continue
			}
			if err := c.check(path+"."+k, p, o[k]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: schema type %q not supported by the checker", path, typ)
	}
	return nil
}

func asStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		out = append(out, e.(string))
	}
	return out
}

// TestOpenAPI: GET /api/openapi.json serves the document; every /api route
// the handler registers is in it; real responses of every documented path
// validate against their schema.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	c := b.as(t, "")

	var doc map[string]any
	require.Equal(t, http.StatusOK, c.get("api/openapi.json", &doc))
	paths := doc["paths"].(map[string]any)
	components := doc["components"].(map[string]any)
	checker := &schemaChecker{schemas: components["schemas"].(map[string]any)}

	// Every route of the handler is documented.
	src, err := os.ReadFile("handler.go")
	require.NoError(t, err)
	routes := regexp.MustCompile(`m\.Handle(?:Func)?\("(GET|POST) (/api/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	require.NotEmpty(t, routes)
	for _, r := range routes {
		ops, ok := paths[r[2]].(map[string]any)
		require.True(t, ok, "route %s %s is not in openapi.json", r[1], r[2])
		require.Contains(t, ops, strings.ToLower(r[1]), "route %s %s is not in openapi.json", r[1], r[2])
	}

	// Data in every state the responses describe.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		switch job.Name {
		case "ok":
			return map[string]int{"n": 1}, nil
		case "hold":
			_ = job.UpdateProgress(ctx, 50)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		case "fatal":
			return nil, drover.Unrecoverable(errors.New("fatal 42"))
		}
		_, _ = job.Log(ctx, "trying")
		return nil, fmt.Errorf("timeout after %dms", 100+job.AttemptsStarted)
	}, nil)
	done := b.add(t, "q", "ok", nil, nil)
	failed := b.add(t, "q", "x", nil, &drover.JobOptions{Attempts: 1})
	fatal := b.add(t, "q", "fatal", nil, &drover.JobOptions{Attempts: 3})
	backoff := b.add(t, "q", "y", nil, &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour, Jitter: 0.1}})
	hold := b.add(t, "q", "hold", nil, nil)
	b.waitState(t, "q", done, drover.StateCompleted)
	b.waitState(t, "q", failed, drover.StateFailed)
	b.waitState(t, "q", fatal, drover.StateFailed)
	b.waitState(t, "q", backoff, drover.StateDelayed)
	b.waitState(t, "q", hold, drover.StateActive)
	require.NoError(t, b.rdb.Set(ctx, b.prefix+":q:"+failed+":lock", "sticky:1", time.Minute).Err())
	require.Equal(t, http.StatusConflict, c.post("api/queues/q/jobs/"+failed+"/retry", nil, nil))
	require.NoError(t, b.rdb.Del(ctx, b.prefix+":q:"+failed+":lock").Err())

	// A flow: a parent in q waiting for a child no worker takes.
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	tree, err := flows.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Children: []drover.FlowJob{{Name: "kid", QueueName: "kids"}}})
	require.NoError(t, err)
	parent, kid := tree.Job.ID, tree.Children[0].Job.ID

	validate := func(method, path string, body any, status int, route string) {
		t.Helper()
		op, ok := paths[route].(map[string]any)[strings.ToLower(method)].(map[string]any)
		require.True(t, ok, "%s %s documented", method, route)
		resp, ok := op["responses"].(map[string]any)[fmt.Sprint(status)].(map[string]any)
		require.True(t, ok, "%s %s: status %d documented", method, route, status)
		if ref, ok := resp["$ref"].(string); ok {
			resp = components["responses"].(map[string]any)[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
		}
		var raw json.RawMessage
		got, _ := c.do(method, path, body, &raw, nil)
		if got >= 300 {
			raw = c.lastBody
		}
		require.Equal(t, status, got, "%s %s", method, path)
		content := resp["content"].(map[string]any)
		schema := content["application/json"].(map[string]any)["schema"].(map[string]any)
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		require.NoError(t, checker.check(method+" "+path, schema, v), "%s", raw)
	}
	for _, tc := range []struct{ path, route string }{
		{"api/session", "/api/session"},
		{"api/overview", "/api/overview"},
		{"api/queues/q", "/api/queues/{queue}"},
		{"api/queues/q/jobs?state=failed", "/api/queues/{queue}/jobs"},
		{"api/queues/q/jobs?state=active", "/api/queues/{queue}/jobs"},
		{"api/queues/q/jobs?state=delayed&filter=left<=2", "/api/queues/{queue}/jobs"},
		{"api/queues/q/jobs/" + done, "/api/queues/{queue}/jobs/{id}"},
		{"api/queues/q/jobs/" + fatal, "/api/queues/{queue}/jobs/{id}"},
		{"api/queues/q/jobs/" + backoff, "/api/queues/{queue}/jobs/{id}"},
		{"api/queues/q/jobs/" + hold, "/api/queues/{queue}/jobs/{id}"},
		{"api/queues/q/jobs/" + parent, "/api/queues/{queue}/jobs/{id}"},
		{"api/queues/kids/jobs/" + kid, "/api/queues/{queue}/jobs/{id}"},
		{"api/queues/q/stalled", "/api/queues/{queue}/stalled"},
		{"api/queues/q/delayed", "/api/queues/{queue}/delayed"},
		{"api/queues/q/budgets", "/api/queues/{queue}/budgets"},
		{"api/queues/q/failures", "/api/queues/{queue}/failures"},
		{"api/queues/q/failures?since=1h", "/api/queues/{queue}/failures"},
		{"api/queues/q/conflicts", "/api/queues/{queue}/conflicts"},
		{"api/queues/q/throughput", "/api/queues/{queue}/throughput"},
		{"api/workers", "/api/workers"},
		{"api/jobs/" + done, "/api/jobs/{id}"},
		{"api/audit", "/api/audit"},
	} {
		validate(http.MethodGet, tc.path, nil, http.StatusOK, tc.route)
	}
	validate(http.MethodGet, "api/queues/q/failures?since=yesterday", nil, http.StatusBadRequest, "/api/queues/{queue}/failures")
	validate(http.MethodPost, "api/queues/q/retry", map[string]any{"dryRun": true, "includeUnrecoverable": true}, http.StatusOK, "/api/queues/{queue}/retry")
	// Nothing matched: "ids" is still the array the schema names (it was
	// null).
	validate(http.MethodPost, "api/queues/q/retry", map[string]any{"dryRun": true, "filter": "name=nomatch"}, http.StatusOK, "/api/queues/{queue}/retry")
	validate(http.MethodPost, "api/queues/q/clean", map[string]any{"dryRun": true, "state": "prioritized", "grace": "0s"}, http.StatusOK, "/api/queues/{queue}/clean")
	validate(http.MethodGet, "api/queues/q/jobs?state=prioritized", nil, http.StatusOK, "/api/queues/{queue}/jobs")
	require.NoError(t, b.queue(t, "q").Pause(ctx))
	validate(http.MethodPost, "api/queues/q/retry", map[string]any{"filter": "name=x"}, http.StatusAccepted, "/api/queues/{queue}/retry")
	validate(http.MethodGet, "api/operations", nil, http.StatusOK, "/api/operations")
	validate(http.MethodGet, "api/operations/1", nil, http.StatusOK, "/api/operations/{id}")
	testkit.WaitFor(t, 20*time.Second, "operation 1 to end", func() bool {
		var op dashboard.Operation
		require.Equal(t, http.StatusOK, c.get("api/operations/1", &op))
		return op.Status != dashboard.OperationRunning
	})
	validate(http.MethodPost, "api/operations/1/cancel", nil, http.StatusConflict, "/api/operations/{id}/cancel")
	validate(http.MethodPost, "api/queues/q/jobs/"+backoff+"/delay", map[string]any{"delayMs": 3_600_000}, http.StatusOK, "/api/queues/{queue}/jobs/{id}/delay")
	validate(http.MethodPost, "api/queues/q/jobs/"+backoff+"/priority", map[string]any{"priority": 3}, http.StatusOK, "/api/queues/{queue}/jobs/{id}/priority")
	validate(http.MethodPost, "api/queues/q/jobs/"+backoff+"/promote", nil, http.StatusOK, "/api/queues/{queue}/jobs/{id}/promote")
	validate(http.MethodPost, "api/queues/q/jobs/"+backoff+"/delay", map[string]any{"delayMs": 1000}, http.StatusConflict, "/api/queues/{queue}/jobs/{id}/delay")
	validate(http.MethodPost, "api/queues/q/jobs/"+done+"/cancel", map[string]any{"reason": "not yet"}, http.StatusConflict, "/api/queues/{queue}/jobs/{id}/cancel")
	validate(http.MethodPost, "api/queues/q/jobs/"+fatal+"/retry", map[string]bool{"resetAttempts": true}, http.StatusOK, "/api/queues/{queue}/jobs/{id}/retry")
	validate(http.MethodPost, "api/queues/q/promote", nil, http.StatusOK, "/api/queues/{queue}/promote")
	validate(http.MethodPost, "api/queues/q/resume", nil, http.StatusOK, "/api/queues/{queue}/resume")
	validate(http.MethodPost, "api/queues/q/pause", nil, http.StatusOK, "/api/queues/{queue}/pause")
	validate(http.MethodPost, "api/queues/q/clean", map[string]any{"grace": "0s"}, http.StatusOK, "/api/queues/{queue}/clean")
	validate(http.MethodPost, "api/queues/q/jobs/"+done+"/remove", nil, http.StatusNotFound, "/api/queues/{queue}/jobs/{id}/remove")
	validate(http.MethodGet, "api/queues/nosuch", nil, http.StatusNotFound, "/api/queues/{queue}")
	_, err = b.queue(t, "q").UpsertJobScheduler(ctx, "yearly", drover.RepeatOptions{Pattern: "0 0 1 1 *", TZ: "Europe/Paris", Limit: 5},
		&drover.JobTemplate{Name: "report"})
	require.NoError(t, err)
	validate(http.MethodGet, "api/queues/q/schedulers", nil, http.StatusOK, "/api/queues/{queue}/schedulers")
	validate(http.MethodPost, "api/queues/q/schedulers/yearly/remove", nil, http.StatusOK, "/api/queues/{queue}/schedulers/{scheduler}/remove")
	validate(http.MethodPost, "api/queues/q/schedulers/yearly/remove", nil, http.StatusNotFound, "/api/queues/{queue}/schedulers/{scheduler}/remove")

	// The live events are described too: read one from the stream.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"api/queues/q/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	go func() { _, _ = b.queue(t, "q").Add(context.Background(), "late", nil, nil) }()
	line := readDataLine(t, resp.Body)
	var ev any
	require.NoError(t, json.Unmarshal([]byte(line), &ev))
	evSchema := paths["/api/queues/{queue}/events"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)["text/event-stream"].(map[string]any)["schema"].(map[string]any)
	require.NoError(t, checker.check("event", evSchema, ev), line)
}

// readDataLine returns the data line of the first "job" event of a
// server-sent events stream (not the "position" event that opens it).
func readDataLine(t *testing.T, r io.Reader) string {
	t.Helper()
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 1024)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := r.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for _, block := range strings.Split(string(buf), "\n\n") {
			if !strings.Contains(block, "event: job\n") || !strings.HasSuffix(string(buf), "\n\n") {
				continue
			}
			for _, l := range strings.Split(block, "\n") {
				if d, ok := strings.CutPrefix(l, "data: "); ok {
					return d
				}
			}
		}
		require.NoError(t, err)
	}
	t.Fatal("no event")
	return ""
}
