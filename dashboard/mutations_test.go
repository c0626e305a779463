package dashboard_test

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestEveryMutationRefusedWithoutSignInOrCSRF takes every POST route the
// handler registers (read from handler.go, so a new one is covered as it
// comes): without credentials it answers 401, signed in without the CSRF
// token 403, each refusal is audited, and the queue's keys are as they
// were. The CSRF test before listed 9 of the 14 routes by hand.
func TestEveryMutationRefusedWithoutSignInOrCSRF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	id := b.add(t, "q", "later", map[string]int{"n": 1}, &drover.JobOptions{Delay: time.Hour})
	b.add(t, "q", "now", nil, nil)
	snapshot := func() map[string]string {
		t.Helper()
		raw, err := statedump.Raw(ctx, b.rdb, b.prefix+":q:*")
		require.NoError(t, err)
		return raw
	}
	before := snapshot()
	require.NotEmpty(t, before)

	src, err := os.ReadFile("handler.go")
	require.NoError(t, err)
	routes := regexp.MustCompile(`m\.Handle(?:Func)?\("POST (/api/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	fill := strings.NewReplacer("{queue}", "q", "{id}", id, "{scheduler}", "s")
	anon, admin := b.as(t, ""), b.as(t, adminToken)
	checked := 0
	for _, r := range routes {
		if r[1] == "/api/login" || r[1] == "/api/logout" {
			continue // signing in and out take no session
		}
		path := strings.TrimPrefix(fill.Replace(r[1]), "/")
		n := len(b.audit.all())
		status, _ := anon.do(http.MethodPost, path, map[string]any{}, nil, nil)
		require.Equal(t, http.StatusUnauthorized, status, path)
		status, _ = admin.do(http.MethodPost, path, map[string]any{}, nil, map[string]string{"X-CSRF-Token": ""})
		require.Equal(t, http.StatusForbidden, status, path)
		entries := b.audit.all()[n:]
		require.Len(t, entries, 2, path)
		require.Equal(t, "denied", entries[0].Outcome, path)
		require.Equal(t, "denied", entries[1].Outcome, path)
		require.Contains(t, entries[1].Error, "CSRF check failed", path)
		checked++
	}
	require.GreaterOrEqual(t, checked, 14)
	require.Equal(t, before, snapshot(), "no refused request changed the queue")
}
