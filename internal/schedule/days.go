package schedule

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// aliases are cron-parser's predefined expressions, matched on the whole
// pattern as given (cron-parser does not trim it first).
var aliases = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
	"@minutely": "0 * * * * *",
	"@secondly": "* * * * * *",
	"@weekdays": "0 0 0 * * 1-5",
	"@weekends": "0 0 0 * * 0,6",
}

// days is the day part of a pattern, its day-of-month and day-of-week
// fields as cron-parser reads and matches them (CronExpression's
// matchDayOfMonth).
type days struct {
	// domAny and dowAny: the field is '*' or '?', cron-parser's wildcard.
	domAny, dowAny bool
	dom            uint32 // bit d: day of month d (1-31)
	domLast        bool   // L: the last day of the month
	dow            uint8  // bit w: weekday w (0 Sunday - 6)
	dowLast        uint8  // bit w from nL: the last weekday w of the month
	nth            int    // n#k: only the k-th weekday of the month (0 = any)
}

// match reports whether the calendar day of t (in its location) is a day
// the pattern runs on.
func (d *days) match(t time.Time) bool {
	y, m, day := t.Date()
	last := time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day()
	wd := uint(t.Weekday())
	dom := d.dom&(1<<uint(day)) != 0 || (d.domLast && day == last)
	dow := (d.dow&(1<<wd) != 0 && (d.nth == 0 || (day+6)/7 == d.nth)) ||
		(d.dowLast&(1<<wd) != 0 && day > last-7)
	switch {
	case !d.domAny && !d.dowAny:
		return dom || dow
	case d.dowAny:
		return dom
	default:
		return dow
	}
}

var (
	nameRE = regexp.MustCompile(`(?i)[a-z]{3}`)
	// cron-parser's names: months, then weekdays, in one table.
	names = map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}
	lastWeekdayRE = regexp.MustCompile(`^[0-7]L$`)
)

// checkListedOnce refuses a value listed twice in the seconds, minutes,
// hours or months field ("0,0 * * * *"), as cron-parser does: a scheduler
// with such a pattern could not go on under a Node worker.
func checkListedOnce(fields []string) error {
	for _, f := range []struct {
		i        int
		name     string
		min, max int
	}{{0, "second", 0, 59}, {1, "minute", 0, 59}, {2, "hour", 0, 23}, {4, "month", 1, 12}} {
		v := strings.NewReplacer("*", fmt.Sprintf("%d-%d", f.min, f.max), "?", fmt.Sprintf("%d-%d", f.min, f.max)).Replace(fields[f.i])
		if f.i == 4 {
			v = nameRE.ReplaceAllStringFunc(v, func(s string) string {
				if n, ok := names[strings.ToLower(s)]; ok {
					return strconv.Itoa(n)
				}
				return s
			})
		}
		if _, err := expand(v, f.min, f.max, func(string) (bool, error) { return false, nil }); err != nil {
			return fmt.Errorf("%s %q: %w", f.name, fields[f.i], err)
		}
	}
	return nil
}

// parseDays reads the day-of-month and day-of-week fields.
func parseDays(domField, dowField string) (*days, error) {
	d := &days{domAny: domField == "*" || domField == "?", dowAny: dowField == "*" || dowField == "?"}
	if err := d.parseDOM(domField); err != nil {
		return nil, fmt.Errorf("day of month %q: %w", domField, err)
	}
	if err := d.parseDOW(dowField); err != nil {
		return nil, fmt.Errorf("day of week %q: %w", dowField, err)
	}
	return d, nil
}

func (d *days) parseDOM(field string) error {
	values, err := expand(strings.NewReplacer("*", "1-31", "?", "1-31").Replace(field), 1, 31, func(atom string) (bool, error) {
		if atom != "L" {
			return false, nil
		}
		d.domLast = true
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, v := range values {
		d.dom |= 1 << uint(v)
	}
	return nil
}

func (d *days) parseDOW(field string) error {
	var err error
	field = nameRE.ReplaceAllStringFunc(field, func(s string) string {
		n, ok := names[strings.ToLower(s)]
		if !ok {
			err = fmt.Errorf("unknown name %q", s)
		}
		return strconv.Itoa(n)
	})
	if err != nil {
		return err
	}
	if head, nth, ok := strings.Cut(field, "#"); ok {
		if strings.ContainsAny(field, ",-/") {
			return fmt.Errorf("# cannot be combined with , - or /")
		}
		k, kerr := strconv.Atoi(nth)
		if kerr != nil || k < 1 || k > 5 {
			return fmt.Errorf("the occurrence after # must be 1 to 5")
		}
		d.nth, field = k, head
	}
	values, err := expand(strings.NewReplacer("*", "0-7", "?", "0-7").Replace(field), 0, 7, func(atom string) (bool, error) {
		if !strings.Contains(atom, "L") {
			return false, nil
		}
		if !lastWeekdayRE.MatchString(atom) {
			return false, fmt.Errorf("%q: L takes one weekday before it (5L: the last Friday)", atom)
		}
		d.dowLast |= 1 << uint((atom[0]-'0')%7)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, v := range values {
		d.dow |= 1 << uint(v%7)
	}
	return nil
}

// expand turns a day field (wildcards already replaced by min-max) into
// its values as cron-parser does: a list of numbers, a-b ranges and /step
// steps ("a/s" is a-max/s); a single 7 in day of week is listed as 0, a
// range keeps it (and lists 0 too when it reaches 7). A value listed twice
// is an error, as in cron-parser. special handles an atom the caller reads
// itself (L forms); it reports whether it did.
func expand(field string, min, max int, special func(string) (bool, error)) ([]int, error) {
	var values []int
	seen := map[int]bool{}
	add := func(v int) error {
		if seen[v] {
			return fmt.Errorf("value %d listed twice", v)
		}
		seen[v] = true
		values = append(values, v)
		return nil
	}
	num := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		return n, nil
	}
	for _, atom := range strings.Split(field, ",") {
		if atom == "" {
			return nil, fmt.Errorf("empty list item")
		}
		if ok, err := special(atom); err != nil || ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		rng, stepText, stepped := strings.Cut(atom, "/")
		step := 1
		if stepped {
			n, err := num(stepText)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("step %q must be a positive number", stepText)
			}
			step = n
			if !strings.Contains(rng, "-") {
				rng += "-" + strconv.Itoa(max)
			}
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		if !isRange {
			v, err := num(lo)
			if err != nil {
				return nil, err
			}
			if v < min || v > max {
				return nil, fmt.Errorf("%d is outside %d-%d", v, min, max)
			}
			if max == 7 {
				v %= 7
			}
			if err := add(v); err != nil {
				return nil, err
			}
			continue
		}
		a, err := num(lo)
		if err != nil {
			return nil, err
		}
		b, err := num(hi)
		if err != nil {
			return nil, err
		}
		if a < min || b > max || a > b {
			return nil, fmt.Errorf("range %d-%d is not within %d-%d", a, b, min, max)
		}
		// cron-parser's createRange: a day-of-week range that reaches 7
		// lists 0 first, then its values, each once.
		var rangeValues []int
		if max == 7 && b == 7 && (b-a)%step == 0 {
			rangeValues = append(rangeValues, 0)
		}
		for v := a; v <= b; v += step {
			if v != 0 || len(rangeValues) == 0 || rangeValues[0] != 0 {
				rangeValues = append(rangeValues, v)
			}
		}
		for _, v := range rangeValues {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	return values, nil
}
