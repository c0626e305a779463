package pgmigrate_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestMigrateSearchPathWithASchemaAhead: drover's tables are in public; a
// schema is created that comes first in the search_path (here app, as a
// schema named after the role would with the default "$user", public). Up
// refuses, saying where the tables are: it created a second, empty set in
// app, which drover's queries then used (a committed operation key was
// forgotten). A search_path that finds the tables in its first schema, or
// that does not find them at all (drover in a schema of its own), is fine.
func TestMigrateSearchPathWithASchemaAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	withPath := func(path string) string {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		q := u.Query()
		q.Set("search_path", path)
		u.RawQuery = q.Encode()
		return u.String()
	}
	public := pgtest.Connect(t, withPath("public"))
	_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(public), nil)
	require.NoError(t, err)
	_, err = public.Exec(ctx, "INSERT INTO drover_operations (op_key, claimed_at) VALUES ('charge-42', now())")
	require.NoError(t, err)
	_, err = public.Exec(ctx, "CREATE SCHEMA app; CREATE SCHEMA lab")
	require.NoError(t, err)
	tablesIn := func(schema string) int {
		var n int
		require.NoError(t, public.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&n))
		return n
	}

	ahead := pgtest.Connect(t, withPath("app,public"))
	done, err := pgmigrate.Up(ctx, pgmigrate.Postgres(ahead), nil)
	require.ErrorContains(t, err, `drover's tables are in schema "public", but the first schema of the search_path (app,public) is "app"`)
	require.ErrorContains(t, err, `put "public" first in the search_path`)
	require.Empty(t, done)
	require.Zero(t, tablesIn("app"), "nothing created in app")
	fresh := pgtest.Connect(t, withPath("app,public"))
	var found bool
	require.NoError(t, fresh.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM drover_operations WHERE op_key = 'charge-42')").Scan(&found))
	require.True(t, found, "drover's queries still find the ledger in public")

	behind := pgtest.Connect(t, withPath("public,app"))
	done, err = pgmigrate.Up(ctx, pgmigrate.Postgres(behind), nil)
	require.NoError(t, err)
	require.Empty(t, done)

	own := pgtest.Connect(t, withPath("lab"))
	done, err = pgmigrate.Up(ctx, pgmigrate.Postgres(own), nil)
	require.NoError(t, err)
	require.Len(t, done, 3, "a schema of its own gets its own tables")
	require.Equal(t, 3, tablesIn("lab"), "drover_migrations, drover_operations, drover_outbox")
}
