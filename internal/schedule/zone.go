package schedule

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Location is time zone tz, read as cron-parser reads it (it hands tz to
// luxon), so that a drover worker computes a Node scheduler's runs in the
// zone a Node worker does:
//
//   - "" is the local time zone of this process (time.Local, from TZ), as
//     cron-parser takes the Node process's own when BullMQ passes no tz. It
//     was UTC, so a scheduler with no tz moved by the zone's offset
//     whenever a drover worker, not a Node one on the same machine,
//     computed its next run. "local", "system" and "default", in any
//     letter case, are the local zone too;
//   - "utc" and "gmt", in any letter case, are UTC; "UTC+3", "utc-05:30"
//     are fixed offsets (luxon's "UTC±H[:MM]");
//   - anything else is an IANA name, in any letter case, as Node's Intl
//     takes it ("europe/paris" is Europe/Paris). A name not spelled as the
//     tz database spells it is looked up in the zoneinfo directory time
//     reads (ZONEINFO, /usr/share/zoneinfo, ...); a process that has none
//     (Go's embedded tzdata only) knows the exact spellings alone.
//
// drover refused all but the exact IANA names, and a drover worker taking
// the run of a Node scheduler whose tz was, say, "utc" could not create
// the next run: the scheduler stopped.
func Location(tz string) (*time.Location, error) {
	if tz == "" {
		return time.Local, nil
	}
	switch strings.ToLower(tz) {
	case "local", "system", "default":
		return time.Local, nil
	case "utc", "gmt":
		return time.UTC, nil
	}
	if loc, ok := fixedOffset(tz); ok {
		return loc, nil
	}
	loc, err := time.LoadLocation(tz)
	if err == nil {
		return loc, nil
	}
	if name, ok := zoneNames()[strings.ToLower(tz)]; ok {
		if loc, ferr := time.LoadLocation(name); ferr == nil {
			return loc, nil
		}
	}
	return nil, fmt.Errorf("time zone %q: %w", tz, err)
}

// offsetRE is luxon's fixed-offset zone (FixedOffsetZone.parseSpecifier).
var offsetRE = regexp.MustCompile(`(?i)^utc([+-]\d{1,2})(?::(\d{2}))?$`)

// fixedOffset reads "UTC+3", "utc-05:30": the minutes take the hours' sign,
// "-0:30" included, as luxon's signedOffset gives them.
func fixedOffset(tz string) (*time.Location, bool) {
	m := offsetRE.FindStringSubmatch(tz)
	if m == nil {
		return nil, false
	}
	hours, _ := strconv.Atoi(m[1])
	minutes, _ := strconv.Atoi(m[2])
	if strings.HasPrefix(m[1], "-") {
		minutes = -minutes
	}
	return time.FixedZone(strings.ToUpper(tz), (hours*60+minutes)*60), true
}

// zoneNames maps the lower-case spelling of every zone in the zoneinfo
// directory time.LoadLocation reads to the file's own name. Read once.
var zoneNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	dirs := []string{"/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/", "/usr/lib/locale/TZ/", "/etc/zoneinfo"}
	if z := os.Getenv("ZONEINFO"); z != "" {
		dirs = append([]string{z}, dirs...)
	}
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			rel, rerr := filepath.Rel(dir, path)
			if err != nil || rerr != nil || rel == "." {
				return nil // an unreadable entry is skipped; the root is no zone
			}
			if d.IsDir() {
				// posix/ and right/ duplicate the zones with other leap
				// second rules; Intl knows neither.
				if rel == "posix" || rel == "right" {
					return fs.SkipDir
				}
				return nil
			}
			name := filepath.ToSlash(rel)
			if strings.ContainsAny(name, ".+") || notZones[name] {
				return nil
			}
			if _, seen := names[strings.ToLower(name)]; !seen {
				names[strings.ToLower(name)] = name
			}
			return nil
		})
		if len(names) > 0 {
			break
		}
	}
	return names
})

// notZones are files of a zoneinfo directory that are no zone Intl knows.
var notZones = map[string]bool{"posixrules": true, "localtime": true, "Factory": true, "SECURITY": true, "leapseconds": true}
