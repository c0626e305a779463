// Package lab is drover's failure lab: it reproduces the three ways a job
// queue runs a business operation twice, and shows what an operation key
// claimed in the effect's own transaction does about each. `drover lab`
// runs it; this package lets you run it from your own code and tests, with
// your own processors.
//
// # The scenarios
//
// Every scenario runs with an unsafe subject, which writes its effect
// without an operation key, and a safe one, which writes it in the
// transaction that claims the key with idempotency.Ledger.Do:
//
//   - [ThrowAfterEffect]: the processor writes the effect and then returns
//     an error. The job has two attempts, so it runs again. Unsafe: 2
//     executions, 2 effects. Safe: 2 executions, 1 effect (the second claim
//     finds the key taken).
//   - [KilledAfterEffect]: a worker in another OS process writes the effect
//     and is SIGKILLed before it acknowledges the job. The job stays active
//     until its lock expires; a worker of the lab's process then recovers it
//     as stalled (stc 1) and runs it again. Unsafe: 2 executions, 2 effects.
//     Safe: 2 executions, 1 effect.
//   - [DuplicateProducer]: two producers add the same business operation at
//     the same moment. Unsafe, without a job id: 2 jobs, 2 effects. Safe,
//     with a job id derived from the operation: the second add reports
//     drover.AddDuplicate, and there is 1 job and 1 effect, with the ledger
//     behind it should the job ever be added again after its record is gone.
//
// [Expect] has the exact numbers, attempts and stalls included. The lab
// asserts them: a run that shows anything else is a failed [Result], and
// `drover lab` exits non-zero. So the lab can fail, and a test makes it fail
// on purpose with [SubjectSabotaged], a "safe" subject that commits its
// effect before it claims the key.
//
// # Counting from durable data
//
// The killed worker takes its memory with it, so the lab counts from the
// database: the processor commits a row in drover_lab_executions before it
// writes anything, and the effect is a row in drover_lab_effects (for the
// built-in subjects; a subject of your own counts its own effects). Jobs,
// attempts made (atm) and stalls (stc) are read from the job hashes in
// Redis. Each [Result] also carries the lab process's in-memory [Counters],
// which miss the killed process's execution: the reason for counting the
// other way.
//
// # Running it
//
// Open the database, create the ledger with pgmigrate.Up and the lab's
// tables with [DB.CreateTables], and call [Run]:
//
//	db := lab.NewSQLite(sqlDB) // or lab.NewPostgres(pool)
//	report, err := lab.Run(ctx, rdb, db, &lab.Options{
//		WorkerCommand: func(spec lab.WorkerSpec) *exec.Cmd {
//			return exec.Command(self, "lab-worker", spec.Encode())
//		},
//	})
//	if err != nil {
//		return err
//	}
//	if err := report.WriteTable(os.Stdout); err != nil {
//		return err
//	}
//	if !report.OK {
//		return fmt.Errorf("the lab did not show what it should: %v", report.Failed())
//	}
//
// Every run gets a queue of its own and an operation key of its own, all
// runs go at once, and a full run takes about LockDuration (1s) plus process
// start-up. The killed-after-effect scenario needs a program to run as the
// worker process: Options.WorkerCommand returns the command, and that
// program calls [RunWorker] with the spec. drover's is `drover lab worker`;
// in a test, re-run the test binary with an environment variable that makes
// TestMain call RunWorker (this package's tests do that).
//
// # Your own processors
//
// A [Subject] is an Effect function that writes the effect of an
// [Operation] (its Key is the operation key) and a CountEffects function
// that counts, from your database, how many times it was written. Mark it
// Safe if it means to write once; pass it in Options.Subjects, and in
// WorkerOptions.Subjects to RunWorker.
//
// # Observability
//
// [Observe] wraps any drover processor so that every execution logs
// "processor start" and "processor finish" with queue, job_name, job_id,
// op_key, attempt and pid, and on finish what the claim found (claim:
// inserted, existed, in_progress, or none for an effect written without a
// key), effect, outcome and duration; and counts executions, effects and
// duplicates suppressed in [Counters]. A processor reports its claim by
// calling [ObserveDo] instead of Ledger.Do. The lab's processors are
// wrapped this way: `drover lab -v` prints the lines, the worker process's
// included, and a killed job shows one execution with claim=inserted in one
// pid and one with claim=existed in another.
package lab
