package emailworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/drovertest"
	"github.com/seed40057009/drover/examples/emailworker"
)

// fakeMailer answers with canned results, one per call.
type fakeMailer struct {
	errs  []error
	calls int
}

func (m *fakeMailer) Send(_ context.Context, to, _ string) (string, error) {
	m.calls++
	if len(m.errs) > 0 {
		err := m.errs[0]
		m.errs = m.errs[1:]
		if err != nil {
			return "", err
		}
	}
	return "msg-" + to, nil
}

func TestSendsAndAudits(t *testing.T) {
	k := drovertest.New(t)
	w := &emailworker.Worker{Mailer: &fakeMailer{}, Audit: k.Queue("audit")}

	res := k.Run(w.Kinds(), "email", emailworker.Email{To: "ada@example.com", Template: "welcome"}, nil)

	if res.Outcome != drover.OutcomeCompleted {
		t.Fatalf("outcome %s, error %v", res.Outcome, res.Err)
	}
	var id string
	if err := res.Decode(&id); err != nil || id != "msg-ada@example.com" {
		t.Fatalf("return value %s (%v)", res.Value, err)
	}
	if string(res.Progress) != "50" || len(res.Logs) != 1 || res.Logs[0] != "rendered welcome" {
		t.Fatalf("progress %s, logs %q", res.Progress, res.Logs)
	}
	sent := drovertest.RequireAddedArgs[emailworker.Sent](t, k, "audit")
	if sent != (emailworker.Sent{To: "ada@example.com", MessageID: "msg-ada@example.com"}) {
		t.Fatalf("audit job %+v", sent)
	}
}

func TestBadInputFailsForGood(t *testing.T) {
	k := drovertest.New(t)
	m := &fakeMailer{}
	w := &emailworker.Worker{Mailer: m, Audit: k.Queue("audit")}

	for name, c := range map[string]struct {
		data any
		want string
	}{
		"not an address": {emailworker.Email{To: "ada"}, `"ada" is not an email address`},
		"wrong payload":  {map[string]any{"to": []string{"a@b"}}, `field "to" is a JSON array, want string`},
	} {
		res := k.Run(w.Kinds(), "email", c.data, &drover.JobOptions{Attempts: 5})
		if res.Outcome != drover.OutcomeFailedUnrecoverable {
			t.Errorf("%s: outcome %s, want failed-unrecoverable", name, res.Outcome)
		}
		if res.Err == nil || !contains(res.Err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %s", name, res.Err, c.want)
		}
	}
	if m.calls != 0 {
		t.Errorf("the mailer was called %d times for bad input", m.calls)
	}
	drovertest.RequireNotAdded(t, k, "audit", "email-sent")
}

// TestRetriesWithBackoff runs a real worker on the kit's clock: the mailer
// is down twice, the job backs off 1 and 2 minutes, and the test moves
// the clock instead of waiting.
func TestRetriesWithBackoff(t *testing.T) {
	k := drovertest.New(t)
	m := &fakeMailer{errs: []error{errors.New("timeout"), errors.New("timeout")}}
	w := &emailworker.Worker{Mailer: m, Audit: k.Queue("audit")}
	k.StartWorker("email", w.Kinds(), nil)
	added, err := k.Queue("email").AddArgs(context.Background(), emailworker.Email{To: "ada@example.com"},
		&drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	id := added.Job.ID

	k.WaitState("email", id, drover.StateDelayed)
	k.Advance(time.Minute)
	for job := k.WaitState("email", id, drover.StateDelayed); job.AttemptsMade < 2; {
		job = k.WaitState("email", id, drover.StateDelayed)
	}
	k.Advance(2 * time.Minute)
	job := k.WaitState("email", id, drover.StateCompleted)
	if job.AttemptsMade != 3 || m.calls != 3 {
		t.Fatalf("attempts %d, mailer calls %d", job.AttemptsMade, m.calls)
	}
	drovertest.RequireAdded(t, k, "audit", "email-sent")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
