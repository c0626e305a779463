package pgsql

import (
	"slices"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedSQL(t *testing.T) {
	t.Parallel()

	t.Run("BothDialectsLoad", func(t *testing.T) {
		t.Parallel()

		_, err := loaded()
		require.NoError(t, err)
	})

	t.Run("DialectsHaveTheSameMigrations", func(t *testing.T) {
		t.Parallel()

		pg, lite := Migrations(Postgres), Migrations(SQLite)
		require.NotEmpty(t, pg)
		require.Len(t, lite, len(pg))
		for i := range pg {
			require.Equal(t, i+1, pg[i].Version)
			require.Equal(t, pg[i].Version, lite[i].Version)
			require.Equal(t, pg[i].Name, lite[i].Name)
		}
	})

	t.Run("SQLiteQueriesArePostgresQueries", func(t *testing.T) {
		t.Parallel()

		// Postgres has a few more (advisory locks); every SQLite query must
		// have a Postgres twin, so call sites can be shared, except the
		// steps of the SQLite outbox's claims, which PostgreSQL makes with
		// row locks.
		pg := QueryNames(Postgres)
		sqliteOnly := []string{"OutboxClaimable", "OutboxClaimed", "OutboxRelease"}
		for _, name := range QueryNames(SQLite) {
			if !slices.Contains(sqliteOnly, name) {
				require.Contains(t, pg, name)
			}
		}
		for _, name := range sqliteOnly {
			require.Contains(t, QueryNames(SQLite), name)
			require.NotContains(t, pg, name)
		}
	})

	t.Run("MigrationsIsACopy", func(t *testing.T) {
		t.Parallel()

		m := Migrations(Postgres)
		m[0].Up = "changed"
		require.NotEqual(t, "changed", Migrations(Postgres)[0].Up)
	})

	t.Run("UnknownQueryPanicsWithTheName", func(t *testing.T) {
		t.Parallel()

		require.PanicsWithValue(t, `pgsql: no sqlite query named "NoSuchQuery"`, func() { Query(SQLite, "NoSuchQuery") })
	})

	t.Run("QueryDropsTheTrailingSemicolon", func(t *testing.T) {
		t.Parallel()

		q := Query(Postgres, "OperationResult")
		require.Equal(t, "SELECT result FROM drover_operations WHERE op_key = $1", q)
	})
}

func TestParseQueries(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		text    string
		want    map[string]string
		wantErr string
	}{
		{
			name: "HeaderIsIgnoredAndCommentsStayWithTheirQuery",
			text: "-- header\n\n-- name: A :one\n-- about A\nSELECT 1;\n\n-- name: B :exec\nDELETE FROM t\nWHERE x = $1;\n",
			want: map[string]string{
				"A": "-- about A\nSELECT 1",
				"B": "DELETE FROM t\nWHERE x = $1",
			},
		},
		{
			name: "KindIsOptional",
			text: "-- name: A\nSELECT 1",
			want: map[string]string{"A": "SELECT 1"},
		},
		{
			name: "NoQueries",
			text: "-- only a header\n",
			want: map[string]string{},
		},
		{
			name:    "DuplicateName",
			text:    "-- name: A :one\nSELECT 1;\n-- name: A :one\nSELECT 2;\n",
			wantErr: "query A is defined twice",
		},
		{
			name:    "OnlyComments",
			text:    "-- name: A :one\n-- nothing here\n",
			wantErr: "query A has no statement",
		},
		{
			name:    "MalformedNameLine",
			text:    "-- name: 1A :one\nSELECT 1;\n",
			wantErr: `malformed name line "-- name: 1A :one"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := ParseQueries(tt.text)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()

	mig := func(body string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(body)} }

	tests := []struct {
		name    string
		files   fstest.MapFS
		wantErr string
	}{
		{
			name: "Valid",
			files: fstest.MapFS{
				"d/migrations/001_a.up.sql":   mig("CREATE TABLE a (x int);"),
				"d/migrations/001_a.down.sql": mig("DROP TABLE a;"),
				"d/migrations/002_b.up.sql":   mig("CREATE TABLE b (x int);"),
				"d/migrations/002_b.down.sql": mig("DROP TABLE b;"),
				"d/queries/a.sql":             mig("-- name: A :one\nSELECT 1;"),
			},
		},
		{
			name: "Gap",
			files: fstest.MapFS{
				"d/migrations/001_a.up.sql":   mig("x"),
				"d/migrations/001_a.down.sql": mig("x"),
				"d/migrations/003_c.up.sql":   mig("x"),
				"d/migrations/003_c.down.sql": mig("x"),
			},
			wantErr: "migration versions must run 1..2 without gaps; 002 is missing",
		},
		{
			name: "MissingDown",
			files: fstest.MapFS{
				"d/migrations/001_a.up.sql": mig("x"),
			},
			wantErr: "migration 001_a needs both an .up.sql and a .down.sql file",
		},
		{
			name: "TwoNamesForOneVersion",
			files: fstest.MapFS{
				"d/migrations/001_a.up.sql":   mig("x"),
				"d/migrations/001_b.down.sql": mig("x"),
			},
			wantErr: `migration 001 is named both "a" and "b"`,
		},
		{
			name: "BadFileName",
			files: fstest.MapFS{
				"d/migrations/1_a.up.sql": mig("x"),
			},
			wantErr: "migration file 1_a.up.sql is not named NNN_name.up.sql or NNN_name.down.sql",
		},
		{
			name: "EmptyFile",
			files: fstest.MapFS{
				"d/migrations/001_a.up.sql":   mig("  \n"),
				"d/migrations/001_a.down.sql": mig("x"),
			},
			wantErr: "migration file 001_a.up.sql is empty",
		},
		{
			name: "QueryDefinedInTwoFiles",
			files: fstest.MapFS{
				"d/migrations/001_a.up.sql":   mig("x"),
				"d/migrations/001_a.down.sql": mig("x"),
				"d/queries/a.sql":             mig("-- name: A :one\nSELECT 1;"),
				"d/queries/b.sql":             mig("-- name: A :one\nSELECT 2;"),
			},
			wantErr: "d/queries/b.sql: query A is defined twice",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := load(tt.files, "d")
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, got.migrations, 2)
			require.Equal(t, Migration{Version: 2, Name: "b", Up: "CREATE TABLE b (x int);", Down: "DROP TABLE b;"}, got.migrations[1])
			require.Equal(t, "SELECT 1", got.queries["A"])
		})
	}
}

func TestDialectString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "postgres", Postgres.String())
	require.Equal(t, "sqlite", SQLite.String())
	require.Equal(t, "Dialect(9)", Dialect(9).String())
}
