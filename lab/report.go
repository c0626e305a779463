package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// WriteTable writes the report as a table, a row per run:
//
//	SCENARIO  MODE  EXECUTIONS  EFFECTS  DUPLICATES SUPPRESSED  ATTEMPTS MADE  STALLED  JOBS  VERDICT
//
// followed by the problems of the runs that failed.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMODE\tEXECUTIONS\tEFFECTS\tDUPS SUPPRESSED\tATTEMPTS MADE\tSTALLED\tJOBS\tVERDICT")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", res.Scenario, res.Mode,
			cell(res.Executions, res.Expected.Executions), cell(res.Effects, res.Expected.Effects),
			res.DuplicatesSuppressed, cell(res.AttemptsMade, res.Expected.AttemptsMade),
			cell(res.StalledCount, res.Expected.StalledCount), cell(res.JobsCreated, res.Expected.JobsCreated),
			res.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Failed() {
		fmt.Fprintf(w, "\n%s / %s failed (queue %s, op_key %s):\n", res.Scenario, res.Mode, res.Queue, res.OpKey)
		for _, p := range res.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	return nil
}

// cell shows a count, and the expected count beside it when they differ.
func cell(got, want int) string {
	if got == want {
		return strconv.Itoa(got)
	}
	return fmt.Sprintf("%d (want %d)", got, want)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
