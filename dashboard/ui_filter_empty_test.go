package dashboard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIFilterThatMatchesNothingSaysSo: a filter that matches none of a
// state's jobs says that no job matches it. The list said "No jobs here."
// under "2 failed jobs; showing those matching name=\"nope\"", as if the
// failed jobs were gone.
func TestUIFilterThatMatchesNothingSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "fe", func(context.Context, *drover.Job) (any, error) { return nil, errors.New("boom") }, nil)
	for range 2 {
		id := b.add(t, "fe", "send", nil, &drover.JobOptions{Attempts: 1})
		b.waitState(t, "fe", id, drover.StateFailed)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/fe?state=failed&name=nope"), chromedp.WaitVisible(chromedp.CSS(`#no-jobs`)))
	require.Equal(t, `No failed job matches name="nope".`, text(t, tab, `#jobs tbody`))
	// No filter: the state is empty.
	do(t, tab, chromedp.Navigate(b.url+"#/q/fe?state=delayed"))
	testkit.WaitFor(t, 30*time.Second, "the empty delayed list", func() bool { return text(t, tab, `#jobs tbody`) == "No jobs here." })
}
