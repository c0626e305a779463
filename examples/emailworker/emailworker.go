// Package emailworker is an example application package: a typed drover
// processor that sends emails through a Mailer and records each sent email
// in an audit queue. Its test (emailworker_test.go) shows how a user tests
// such a processor with drovertest alone: no Redis server, under a second.
package emailworker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seed40057009/drover"
)

// Email is the job: its Kind is the job name producers add it under.
type Email struct {
	To       string `json:"to"`
	Template string `json:"template"`
}

func (Email) Kind() string { return "email" }

// Sent is what the worker records in the audit queue for every email sent.
type Sent struct {
	To        string `json:"to"`
	MessageID string `json:"message_id"`
}

func (Sent) Kind() string { return "email-sent" }

// Mailer sends one message and returns the provider's message id.
type Mailer interface {
	Send(ctx context.Context, to, body string) (string, error)
}

// ErrRejected is a Mailer's answer for an address it will never accept.
var ErrRejected = errors.New("address rejected")

// Worker holds the processor's dependencies.
type Worker struct {
	Mailer Mailer
	Audit  *drover.Queue
}

// Kinds returns the processor to give drover.NewWorker.
func (w *Worker) Kinds() *drover.Kinds {
	var k drover.Kinds
	drover.Work(&k, w.send)
	return &k
}

func (w *Worker) send(ctx context.Context, job *drover.Job, e Email) (any, error) {
	if !strings.Contains(e.To, "@") {
		return nil, drover.Unrecoverable(fmt.Errorf("%q is not an email address", e.To))
	}
	body := "Hello from template " + e.Template
	_, _ = job.Log(ctx, "rendered "+e.Template)
	_ = job.UpdateProgress(ctx, 50)
	id, err := w.Mailer.Send(ctx, e.To, body)
	if errors.Is(err, ErrRejected) {
		return nil, drover.Unrecoverable(err)
	}
	if err != nil {
		return nil, err // retried with the job's backoff
	}
	if _, err := w.Audit.AddArgs(ctx, Sent{To: e.To, MessageID: id}, nil); err != nil {
		return nil, err
	}
	return id, nil
}
