package lognote_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/lognote"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	lim := lognote.NewLimiter(5*time.Second, func() time.Time { return now }, "down")

	type step struct {
		after time.Duration
		msg   string
		ok    bool
		held  int
	}
	for i, s := range []step{
		{0, "down", true, 0},
		{time.Second, "down", false, 0},
		{time.Second, "down", false, 0},
		{0, "other", true, 0}, // not limited
		{0, "other", true, 0},
		{3 * time.Second, "down", true, 2}, // 5 s after the first line
		{time.Second, "down", false, 0},
		{10 * time.Second, "down", true, 1},
		{10 * time.Second, "down", true, 0},
	} {
		now = now.Add(s.after)
		ok, held := lim.Allow(s.msg)
		require.Equal(t, s.ok, ok, "step %d", i)
		require.Equal(t, s.held, held, "step %d", i)
	}
}

func TestHandlerSharesItsLimiterAcrossWith(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	lim := lognote.NewLimiter(5*time.Second, func() time.Time { return now }, "down")
	log := slog.New(lognote.NewHandler(slog.NewTextHandler(&buf, nil), lim))
	a, b := log.With("part", "a"), log.With("part", "b")
	a.Warn("down")
	b.Warn("down")
	a.Warn("down")
	now = now.Add(6 * time.Second)
	b.Warn("down")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	require.Contains(t, lines[0], "part=a")
	require.NotContains(t, lines[0], "suppressed")
	require.Contains(t, lines[1], "part=b")
	require.Contains(t, lines[1], "suppressed=2")
}
