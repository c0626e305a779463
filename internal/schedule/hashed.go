package schedule

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// fieldBounds are the values cron-parser allows in each of the six fields
// (seconds first); day of week runs to 7, Sunday again.
var fieldBounds = [6][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}

// hashedItem is one list item of cron-parser's "hashed" syntax: H, H(a-b),
// H/n or H(a-b)/n.
var hashedItem = regexp.MustCompile(`^H(?:\((\d+)-(\d+)\))?(?:/(\d+))?$`)

// expandHashed replaces the hashed items of the six fields by the values
// cron-parser draws for them. Without a seed cron-parser draws anew on every
// parse (BullMQ parses a scheduler's pattern for each next run), so one draw
// per field, uniform in [0, 1), stands for it: H is a value of the field's
// range (or of a-b, clamped to the field), H/n every n-th value from a drawn
// offset below n. Fields without H come back unchanged.
func expandHashed(fields []string, draw func() float64) ([]string, error) {
	out := append([]string(nil), fields...)
	for i, f := range fields {
		if !strings.Contains(f, "H") {
			continue
		}
		r := draw()
		items := strings.Split(f, ",")
		for k, item := range items {
			// Anything else (a day name such as THU) is for the field's
			// own parser.
			m := hashedItem.FindStringSubmatch(item)
			if m == nil {
				continue
			}
			lo, hi := fieldBounds[i][0], fieldBounds[i][1]
			if m[1] != "" {
				a, _ := strconv.Atoi(m[1])
				b, _ := strconv.Atoi(m[2])
				if a > b {
					return nil, fmt.Errorf("field %d: hashed range %d-%d has min > max", i+1, a, b)
				}
				lo, hi = max(a, lo), min(b, hi)
				if lo > hi {
					return nil, fmt.Errorf("field %d: hashed range %s-%s has no value the field can hold", i+1, m[1], m[2])
				}
			}
			pick := strconv.Itoa(lo + int(r*float64(hi-lo+1)))
			if m[3] == "" {
				items[k] = pick
				continue
			}
			step, _ := strconv.Atoi(m[3])
			if step <= 0 {
				return nil, fmt.Errorf("field %d: step %d must be positive", i+1, step)
			}
			var vals []string
			for v := lo/step*step + int(r*float64(step)); v <= hi; v += step {
				if v >= lo {
					vals = append(vals, strconv.Itoa(v))
				}
			}
			if len(vals) == 0 {
				vals = []string{pick}
			}
			items[k] = strings.Join(vals, ",")
		}
		out[i] = strings.Join(items, ",")
	}
	return out, nil
}

// randomDraw is the draw of an unseeded parse.
func randomDraw() float64 { return rand.Float64() }
