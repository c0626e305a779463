package inspect

import (
	"fmt"
	"strconv"
	"strings"

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
}

// IsZero reports whether f matches every job.
func (f Filter) IsZero() bool {
	return f.Name == "" && f.Reason == "" && f.MaxAttemptsLeft == nil && f.Error == ""
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

func (f *Filter) set(term string) error {
	// The operator is the term's first "=" (with the "<" before it, "<="):
	// values, unquoted by now, may hold either (error="x left<=<n>").
	eq := strings.IndexByte(term, '=')
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
		return fmt.Errorf("unknown term %q (want name=, reason=, error= or left<=)", term)
	}
	if eq < 0 {
		return fmt.Errorf("term %q is not key=value (want name=, reason=, error= or left<=)", term)
	}
	switch k, v := term[:eq], term[eq+1:]; k {
	case "name":
		f.Name = v
	case "reason":
		f.Reason = v
	case "error":
		f.Error = v
	default:
		return fmt.Errorf("unknown term %q (want name=, reason=, error= or left<=)", term)
	}
	return nil
}
