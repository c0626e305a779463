package dashboard_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestUsersSharingATokenRefused: two users with one bearer token (a token
// pasted twice in --token or DROVER_DASHBOARD_TOKENS) are refused at
// start. A token names its user: shared, it signed in as the last user
// listed, so a viewer's token made its holder an admin, or an admin was
// audited as someone else.
func TestUsersSharingATokenRefused(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	const shared = "shared-token-0123456789"
	for _, users := range [][]dashboard.User{
		{{Name: "vera", Role: dashboard.RoleViewer, Token: shared}, {Name: "ada", Role: dashboard.RoleAdmin, Token: shared}},
		{{Name: "ada", Role: dashboard.RoleAdmin, Token: shared}, {Name: "otto", Role: dashboard.RoleOperator, Password: ottoPassword}, {Name: "vera", Role: dashboard.RoleViewer, Token: shared}},
	} {
		h, err := dashboard.New(ins, &dashboard.Options{Auth: &dashboard.Auth{Users: users}})
		if h != nil {
			require.NoError(t, h.Close(context.Background()))
		}
		require.ErrorContains(t, err, "has the same Token as Users[0]", "%+v", users)
	}
}
