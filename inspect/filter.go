package inspect

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seed40057009/drover"
)

// Filter selects jobs. The zero Filter matches every job; set fields must
// all match.
type Filter struct {
	// Name matches jobs with exactly this name. "" = any.
	Name string `json:"name,omitempty"`
	// Reason matches jobs whose failed reason contains this text, ignoring
	// case. "" = any.
	Reason string `json:"reason,omitempty"`
	// MaxAttemptsLeft matches jobs with at most this many attempts left of
	// their budget (see Budget). nil = any.
	MaxAttemptsLeft *int `json:"maxAttemptsLeft,omitempty"`
	// Error matches jobs whose failed reason normalises to this error group
	// (see NormalizeError and FailureGroups). "" = any.
	Error string `json:"error,omitempty"`
	// FinishedSince matches jobs that finished at or after this instant:
	// the window of FailureGroupsSince, so a group's filter selects the
	// group's jobs, not every job of its error that ever failed. Zero = any.
	FinishedSince time.Time `json:"finishedSince,omitzero"`
}

// IsZero reports whether f matches every job.
func (f Filter) IsZero() bool {
	return f.Name == "" && f.Reason == "" && f.MaxAttemptsLeft == nil && f.Error == "" && f.FinishedSince.IsZero()
}

// Match reports whether job passes the filter.
func (f Filter) Match(job *drover.Job) bool {
	if f.Name != "" && job.Name != f.Name {
		return false
	}
	if f.Reason != "" && !strings.Contains(strings.ToLower(job.FailedReason), strings.ToLower(f.Reason)) {
		return false
	}
	if f.MaxAttemptsLeft != nil && BudgetOf(job).Left > *f.MaxAttemptsLeft {
		return false
	}
	if f.Error != "" && NormalizeError(job.FailedReason) != f.Error {
		return false
	}
	if !f.FinishedSince.IsZero() && (job.FinishedOn.IsZero() || job.FinishedOn.Before(f.FinishedSince)) {
		return false
	}
	return true
}

// String renders f in the syntax ParseFilter reads.
func (f Filter) String() string {
	var terms []string
	if f.Name != "" {
		terms = append(terms, "name="+quoteTerm(f.Name))
	}
	if f.Reason != "" {
		terms = append(terms, "reason="+quoteTerm(f.Reason))
	}
	if f.MaxAttemptsLeft != nil {
		terms = append(terms, "left<="+strconv.Itoa(*f.MaxAttemptsLeft))
	}
	if f.Error != "" {
		terms = append(terms, "error="+quoteTerm(f.Error))
	}
	if !f.FinishedSince.IsZero() {
		terms = append(terms, "finished>="+f.FinishedSince.UTC().Format(finishedLayout))
	}
	return strings.Join(terms, " ")
}

func quoteTerm(s string) string {
	if strings.ContainsAny(s, " \t,\"") || s == "" {
		return strconv.Quote(s)
	}
	return s
}

// ParseFilter reads a filter expression: terms separated by spaces or
// commas, each one of
//
//	name=NAME        the job's name is NAME
//	reason=TEXT      the failed reason contains TEXT (any case)
//	left<=N          at most N attempts left (also attempts-left<=N)
//	error=GROUP      the failed reason's error group (NormalizeError)
//	finished>=TIME   finished at or after TIME (RFC 3339, as
//	                 2026-12-06T08:00:00Z)
//
// A value with spaces or commas is written in double quotes, Go style:
// reason="connection refused". An empty expression matches every job.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	rest := strings.TrimSpace(s)
	for rest != "" {
		var term string
		var err error
		term, rest, err = nextTerm(rest)
		if err != nil {
			return Filter{}, fmt.Errorf("filter %q: %w", s, err)
		}
		if term == "" {
			continue
		}
		if err := f.set(term); err != nil {
			return Filter{}, fmt.Errorf("filter %q: %w", s, err)
		}
	}
	return f, nil
}

// nextTerm splits off the first term, unquoting a quoted value.
func nextTerm(s string) (term, rest string, err error) {
	s = strings.TrimLeft(s, " \t,")
	var b strings.Builder
	for len(s) > 0 {
		switch c := s[0]; c {
		case ' ', '\t', ',':
			return b.String(), s, nil
		case '"':
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return "", "", fmt.Errorf("unterminated quoted value at %q", s)
			}
			v, _ := strconv.Unquote(q)
			b.WriteString(v)
			s = s[len(q):]
		default:
			b.WriteByte(c)
			s = s[1:]
		}
	}
	return b.String(), "", nil
}

// wantTerms names the terms in ParseFilter's errors.
const wantTerms = "want name=, reason=, error=, left<= or finished>="

// finishedLayout renders Filter.FinishedSince: RFC 3339 to the
// millisecond, finishedOn's precision.
const finishedLayout = "2006-01-02T15:04:05.999Z07:00"

func (f *Filter) set(term string) error {
	// The operator is the term's first "=" (with the "<" before it, "<="):
	// values, unquoted by now, may hold either (error="x left<=<n>").
	eq := strings.IndexByte(term, '=')
	if eq > 0 && term[eq-1] == '>' {
		k, v := term[:eq-1], term[eq+1:]
		if k != "finished" {
			return fmt.Errorf("unknown term %q (%s)", term, wantTerms)
		}
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return fmt.Errorf("finished>= needs a time such as 2026-12-06T08:00:00Z, got %q", v)
		}
		f.FinishedSince = at
		return nil
	}
	if eq > 0 && term[eq-1] == '<' {
		k, v := term[:eq-1], term[eq+1:]
		switch k {
		case "left", "attempts-left":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s<= needs a whole number of attempts, got %q", k, v)
			}
			f.MaxAttemptsLeft = &n
			return nil
		}
		return fmt.Errorf("unknown term %q (%s)", term, wantTerms)
	}
	if eq < 0 {
		return fmt.Errorf("term %q is not key=value (%s)", term, wantTerms)
	}
	switch k, v := term[:eq], term[eq+1:]; k {
	case "name":
		f.Name = v
	case "reason":
		f.Reason = v
	case "error":
		f.Error = v
	default:
		return fmt.Errorf("unknown term %q (%s)", term, wantTerms)
	}
	return nil
}
