package difftest

import "slices"

// Shrink returns a smallest program it finds that still fails: delta
// debugging over the steps (drop chunks, halving their size down to single
// steps), then simplifications of each remaining step (options dropped,
// drover steps handed to Node, outcomes made plain). fails runs a program
// and reports whether it still shows a divergence; it is called at most
// budget times.
func Shrink(p *Program, budget int, fails func(*Program) bool) *Program {
	cur := clone(p)
	calls := 0
	try := func(c *Program) bool {
		if calls >= budget {
			return false
		}
		calls++
		if fails(c) {
			cur = c
			return true
		}
		return false
	}
	// ddmin: remove chunks of n steps.
	for n := max(len(cur.Steps)/2, 1); n >= 1; {
		removed := false
		for start := 0; start < len(cur.Steps); {
			c := clone(cur)
			end := min(start+n, len(c.Steps))
			c.Steps = slices.Delete(c.Steps, start, end)
			if len(c.Steps) > 0 && try(c) {
				removed = true
				continue // the same start now names the next chunk
			}
			start += n
		}
		if !removed {
			if n == 1 {
				break
			}
			n /= 2
		}
	}
	// Simplify each step until nothing changes.
	for changed := true; changed && calls < budget; {
		changed = false
		for i := range cur.Steps {
			// After a success the step changed: list its edits again.
			for j := 0; ; j++ {
				edits := simplifications(&cur.Steps[i])
				if j >= len(edits) {
					break
				}
				c := clone(cur)
				edits[j](&c.Steps[i])
				if try(c) {
					changed = true
					j = -1
				}
			}
		}
	}
	return cur
}

// simplifications are edits that make a step simpler, each tried alone.
func simplifications(s *Step) []func(*Step) {
	var out []func(*Step)
	if s.By == Drover {
		out = append(out, func(s *Step) { s.By = Node })
	}
	if a := s.Add; a != nil {
		if len(a.Data) > 1 {
			out = append(out, func(s *Step) { s.Add.Data = map[string]any{"n": s.Add.Data["n"]} })
		}
		if a.JobID != "" {
			out = append(out, func(s *Step) { s.Add.JobID = "" })
		}
		if a.Delay != 0 {
			out = append(out, func(s *Step) { s.Add.Delay = 0 })
		}
		if a.Priority != 0 {
			out = append(out, func(s *Step) { s.Add.Priority = 0 })
		}
		if a.LIFO {
			out = append(out, func(s *Step) { s.Add.LIFO = false })
		}
		if a.Backoff != nil {
			out = append(out, func(s *Step) { s.Add.Backoff = nil })
			if a.Backoff.Jitter != 0 {
				out = append(out, func(s *Step) { s.Add.Backoff.Jitter = 0 })
			}
		}
		if a.Attempts != 0 && a.Backoff == nil {
			out = append(out, func(s *Step) { s.Add.Attempts = 0 })
		}
		if a.RemoveOnComplete != nil {
			out = append(out, func(s *Step) { s.Add.RemoveOnComplete = nil })
		}
		if a.RemoveOnFail != nil {
			out = append(out, func(s *Step) { s.Add.RemoveOnFail = nil })
		}
		if a.Dedup != nil {
			out = append(out, func(s *Step) { s.Add.Dedup = nil })
			if a.Dedup.TTL != 0 && !a.Dedup.Extend && !a.Dedup.Replace {
				out = append(out, func(s *Step) { s.Add.Dedup.TTL = 0 })
			}
		}
		if a.KeepLogs != 0 {
			out = append(out, func(s *Step) { s.Add.KeepLogs = 0 })
		}
		if a.StackTraceLimit != 0 {
			out = append(out, func(s *Step) { s.Add.StackTraceLimit = 0 })
		}
	}
	if o := s.Outcome; o != nil && o.Value != nil {
		out = append(out, func(s *Step) { s.Outcome.Value = nil })
	}
	if s.ResetMade {
		out = append(out, func(s *Step) { s.ResetMade = false })
	}
	if s.ResetStarted {
		out = append(out, func(s *Step) { s.ResetStarted = false })
	}
	if s.LIFO {
		out = append(out, func(s *Step) { s.LIFO = false })
	}
	if s.Limit != 0 {
		out = append(out, func(s *Step) { s.Limit = 0 })
	}
	return out
}

// clone copies a program deeply enough for Shrink's edits.
func clone(p *Program) *Program {
	c := &Program{Seed: p.Seed, Steps: make([]Step, len(p.Steps))}
	for i, s := range p.Steps {
		if s.Add != nil {
			a := *s.Add
			a.Data = make(map[string]any, len(s.Add.Data))
			for k, v := range s.Add.Data {
				a.Data[k] = v
			}
			if s.Add.Backoff != nil {
				b := *s.Add.Backoff
				a.Backoff = &b
			}
			if s.Add.Dedup != nil {
				d := *s.Add.Dedup
				a.Dedup = &d
			}
			s.Add = &a
		}
		if s.Outcome != nil {
			o := *s.Outcome
			s.Outcome = &o
		}
		c.Steps[i] = s
	}
	return c
}

// Clone returns a deep copy of p.
func (p *Program) Clone() *Program { return clone(p) }
