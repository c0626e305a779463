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
	if cur.EventsMaxLen != 0 {
		c := clone(cur)
		c.EventsMaxLen = 0
		try(c)
	}
	if cur.AddChunk != 0 {
		c := clone(cur)
		c.AddChunk = 0
		try(c)
	}
	// The queues' default job options: dropped, or each field dropped (an
	// add's simplifications, on a step that holds them).
	for _, defaults := range []func(*Program) **Add{
		func(p *Program) **Add { return &p.Defaults },
		func(p *Program) **Add { return &p.OtherDefaults },
	} {
		if *defaults(cur) == nil {
			continue
		}
		c := clone(cur)
		*defaults(c) = nil
		if try(c) {
			continue
		}
		for j := 0; ; j++ {
			edits := simplifications(&Step{Add: *defaults(cur)})
			if j >= len(edits) {
				break
			}
			c := clone(cur)
			st := Step{Add: *defaults(c)}
			edits[j](&st)
			if try(c) {
				j = -1
			}
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
	if s.OtherQueue {
		out = append(out, func(s *Step) { s.OtherQueue = false })
	}
	for i := range s.Children {
		if len(s.Children) > 1 {
			out = append(out, func(s *Step) { s.Children = slices.Delete(s.Children, i, i+1) })
		}
		if len(s.Children[i].Children) > 0 {
			out = append(out, func(s *Step) { s.Children[i].Children = nil })
		}
		for j := range s.Children[i].Children {
			if len(s.Children[i].Children) > 1 {
				out = append(out, func(s *Step) { s.Children[i].Children = slices.Delete(s.Children[i].Children, j, j+1) })
			}
			if len(s.Children[i].Children[j].Children) > 0 {
				// A bulk tree's third level (OpAddFlows).
				out = append(out, func(s *Step) { s.Children[i].Children[j].Children = nil })
			}
		}
	}
	if a := s.Add; a != nil {
		if a.Parent != "" {
			out = append(out, func(s *Step) { s.Add.Parent, s.Add.OnParentFailure, s.Add.ParentInOther = "", "", false })
		}
		if a.OnParentFailure != "" {
			out = append(out, func(s *Step) { s.Add.OnParentFailure = "" })
		}
		if len(a.Data) > 1 {
			out = append(out, func(s *Step) { s.Add.Data = map[string]any{"n": s.Add.Data["n"]} })
		}
		if a.TelemetryMeta != "" || a.OmitContext {
			out = append(out, func(s *Step) { s.Add.TelemetryMeta, s.Add.OmitContext = "", false })
		}
		if a.JobName != "" {
			out = append(out, func(s *Step) { s.Add.JobName = "" })
		}
		if a.DataRaw != "" {
			out = append(out, func(s *Step) { s.Add.DataRaw = "" })
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
		if a.LIFORaw != nil {
			out = append(out, func(s *Step) { s.Add.LIFORaw = nil })
		}
		if a.StackTraceLimit != 0 {
			out = append(out, func(s *Step) { s.Add.StackTraceLimit = 0 })
		}
		if a.TimestampAgo != 0 {
			out = append(out, func(s *Step) { s.Add.TimestampAgo = 0 })
		}
	}
	if o := s.Outcome; o != nil && o.Value != nil {
		out = append(out, func(s *Step) { s.Outcome.Value = nil })
	}
	if o := s.Outcome; o != nil && o.FetchNext {
		out = append(out, func(s *Step) { s.Outcome.FetchNext = false })
	}
	if c := s.Scheduler; c != nil && c.End != 0 {
		out = append(out, func(s *Step) { s.Scheduler.End = 0 })
	}
	if c := s.Scheduler; c != nil && c.Immediately {
		out = append(out, func(s *Step) { s.Scheduler.Immediately = false })
	}
	if c := s.Scheduler; c != nil && c.TZ != "" {
		out = append(out, func(s *Step) { s.Scheduler.TZ = "" })
	}
	if c := s.Scheduler; c != nil && c.Offset != 0 {
		out = append(out, func(s *Step) { s.Scheduler.Offset = 0 })
	}
	if s.WorkerRemoveOnComplete != nil {
		out = append(out, func(s *Step) { s.WorkerRemoveOnComplete = nil })
	}
	if s.WorkerRemoveOnFail != nil {
		out = append(out, func(s *Step) { s.WorkerRemoveOnFail = nil })
	}
	if s.LimiterMax != 0 {
		out = append(out, func(s *Step) { s.LimiterMax = 0 })
	}
	if s.MaxStarted != 0 {
		out = append(out, func(s *Step) { s.MaxStarted = 0 })
	}
	if s.Concurrency != 0 {
		out = append(out, func(s *Step) { s.Concurrency = 0 })
	}
	if (s.Op == OpCheckStalled || s.Op == OpObliterate) && s.Limit != 0 {
		out = append(out, func(s *Step) { s.Limit = 0 })
	}
	if s.NoForce {
		out = append(out, func(s *Step) { s.NoForce = false })
	}
	if s.KeepChildren {
		out = append(out, func(s *Step) { s.KeepChildren = false })
	}
	if s.Metrics != 0 {
		out = append(out, func(s *Step) { s.Metrics = 0 })
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
	if s.Op == OpAddBurst && s.Limit > 1 {
		// Fewer copies, down to one.
		out = append(out, func(s *Step) { s.Limit /= 2 })
	}
	if s.Limit != 0 && s.Op != OpSetGlobalConcurrency && s.Op != OpSetGlobalRateLimit && s.Op != OpAddBurst {
		// A cap or max of 0 is not an input the generator makes (drover
		// refuses it, Node stores it): a program shrunk to one would
		// diverge for another reason.
		out = append(out, func(s *Step) { s.Limit = 0 })
	}
	return out
}

// clone copies a program deeply enough for Shrink's edits.
func clone(p *Program) *Program {
	c := &Program{Seed: p.Seed, Steps: make([]Step, len(p.Steps)), Manual: p.Manual, Defaults: cloneAdd(p.Defaults),
		OtherDefaults: cloneAdd(p.OtherDefaults), EventsMaxLen: p.EventsMaxLen, AddChunk: p.AddChunk}
	for i, s := range p.Steps {
		s.Add = cloneAdd(s.Add)
		if s.Children != nil {
			cs := make([]*Add, len(s.Children))
			for j, a := range s.Children {
				cs[j] = cloneAdd(a)
			}
			s.Children = cs
		}
		if s.Outcome != nil {
			o := *s.Outcome
			s.Outcome = &o
		}
		if s.Scheduler != nil {
			sc := *s.Scheduler
			s.Scheduler = &sc
		}
		c.Steps[i] = s
	}
	return c
}

func cloneAdd(a *Add) *Add {
	if a == nil {
		return nil
	}
	c := *a
	c.Data = make(map[string]any, len(a.Data))
	for k, v := range a.Data {
		c.Data[k] = v
	}
	if a.Backoff != nil {
		b := *a.Backoff
		c.Backoff = &b
	}
	if a.Dedup != nil {
		d := *a.Dedup
		c.Dedup = &d
	}
	if a.Children != nil {
		c.Children = make([]*Add, len(a.Children))
		for i, g := range a.Children {
			c.Children[i] = cloneAdd(g)
		}
	}
	return &c
}

// Clone returns a deep copy of p.
func (p *Program) Clone() *Program { return clone(p) }
