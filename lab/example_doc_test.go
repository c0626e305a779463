package lab_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/lab"
)

// runLab is the package doc's snippet, compiled (ExampleRun runs the lab).
func runLab(ctx context.Context, rdb redis.UniversalClient, sqlDB *sql.DB, self string) error {
	db := lab.NewSQLite(sqlDB) // or lab.NewPostgres(pool)
	report, err := lab.Run(ctx, rdb, db, &lab.Options{
		WorkerCommand: func(spec lab.WorkerSpec) *exec.Cmd {
			return exec.Command(self, "lab-worker", spec.Encode())
		},
	})
	if err != nil {
		return err
	}
	if err := report.WriteTable(os.Stdout); err != nil {
		return err
	}
	if !report.OK {
		return fmt.Errorf("the lab did not show what it should: %v", report.Failed())
	}
	return nil
}

// Running the lab from a program of your own.
func ExampleNewSQLite() {
	_ = runLab
}
