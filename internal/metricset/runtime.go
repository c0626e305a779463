package metricset

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	runtimemetrics "runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// Runtime returns the Go runtime and process families a Prometheus client
// serves by default: the same names, types and labels as client_golang's Go
// and process collectors (go_goroutines, go_memstats_*, go_gc_duration_seconds,
// process_cpu_seconds_total, process_resident_memory_bytes, ...), read from
// runtime/metrics and, on Linux, /proc. A process figure that cannot be read
// (another OS) is left out.
func Runtime(context.Context) []Family {
	return append(goFamilies(), processFamilies()...)
}

// The runtime/metrics the go_memstats families add up.
var memSamples = []string{
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/allocs:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/gc/heap/frees:objects",
	"/gc/heap/tiny/allocs:objects",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/unused:bytes",
	"/gc/heap/objects:objects",
	"/gc/heap/allocs:objects",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/total:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/sched/gomaxprocs:threads",
}

func goFamilies() []Family {
	samples := make([]runtimemetrics.Sample, len(memSamples))
	for i, name := range memSamples {
		samples[i].Name = name
	}
	runtimemetrics.Read(samples)
	v := make(map[string]float64, len(samples))
	for _, s := range samples {
		if s.Value.Kind() == runtimemetrics.KindUint64 {
			v[s.Name] = float64(s.Value.Uint64())
		}
	}
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	threads, _ := runtime.ThreadCreateProfile(nil)

	g := func(name, help string, value float64) Family {
		return Family{Name: name, Help: help, Type: TypeGauge, Metrics: []Metric{{Value: value}}}
	}
	c := func(name, help string, value float64) Family {
		return Family{Name: name, Help: help, Type: TypeCounter, Metrics: []Metric{{Value: value}}}
	}
	heapObjects := v["/memory/classes/heap/objects:bytes"]
	free, released, unused := v["/memory/classes/heap/free:bytes"], v["/memory/classes/heap/released:bytes"], v["/memory/classes/heap/unused:bytes"]
	tiny := v["/gc/heap/tiny/allocs:objects"]
	lastGC := 0.0
	if !gc.LastGC.IsZero() {
		lastGC = float64(gc.LastGC.UnixNano()) / 1e9
	}
	pauses := Metric{Count: uint64(gc.NumGC), Sum: gc.PauseTotal.Seconds()}
	for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		pauses.Quantiles = append(pauses.Quantiles, Quantile{Quantile: q, Value: gc.PauseQuantiles[i].Seconds()})
	}
	return []Family{
		{Name: "go_gc_duration_seconds", Help: "Stop-the-world pauses of the garbage collector, in seconds.", Type: TypeSummary, Metrics: []Metric{pauses}},
		g("go_gc_gogc_percent", "The heap growth target (GOGC, debug.SetGCPercent); 100 unless set.", v["/gc/gogc:percent"]),
		g("go_gc_gomemlimit_bytes", "The Go memory limit (GOMEMLIMIT, debug.SetMemoryLimit); math.MaxInt64 unless set.", v["/gc/gomemlimit:bytes"]),
		g("go_goroutines", "Goroutines that exist now.", float64(runtime.NumGoroutine())),
		{Name: "go_info", Help: "The Go version the program was built with.", Type: TypeGauge, Metrics: []Metric{{Labels: []Label{{"version", runtime.Version()}}, Value: 1}}},
		g("go_memstats_alloc_bytes", "Bytes of heap objects in use.", heapObjects),
		c("go_memstats_alloc_bytes_total", "Bytes allocated on the heap so far, freed or not.", v["/gc/heap/allocs:bytes"]),
		g("go_memstats_buck_hash_sys_bytes", "Bytes of the profiling bucket hash table.", v["/memory/classes/profiling/buckets:bytes"]),
		c("go_memstats_frees_total", "Heap objects freed so far.", v["/gc/heap/frees:objects"]+tiny),
		g("go_memstats_gc_sys_bytes", "Bytes of garbage collector metadata.", v["/memory/classes/metadata/other:bytes"]),
		g("go_memstats_heap_alloc_bytes", "Bytes of heap objects in use (as go_memstats_alloc_bytes).", heapObjects),
		g("go_memstats_heap_idle_bytes", "Heap bytes not in use: free or released to the OS.", released+free),
		g("go_memstats_heap_inuse_bytes", "Heap bytes in spans in use.", heapObjects+unused),
		g("go_memstats_heap_objects", "Heap objects allocated and not yet freed.", v["/gc/heap/objects:objects"]),
		g("go_memstats_heap_released_bytes", "Heap bytes released to the OS.", released),
		g("go_memstats_heap_sys_bytes", "Heap bytes obtained from the OS.", heapObjects+unused+released+free),
		g("go_memstats_last_gc_time_seconds", "When the last garbage collection ended, in seconds since 1970.", lastGC),
		c("go_memstats_mallocs_total", "Heap objects allocated so far.", v["/gc/heap/allocs:objects"]+tiny),
		g("go_memstats_mcache_inuse_bytes", "Bytes of mcache structures in use.", v["/memory/classes/metadata/mcache/inuse:bytes"]),
		g("go_memstats_mcache_sys_bytes", "Bytes of mcache structures obtained from the OS.", v["/memory/classes/metadata/mcache/inuse:bytes"]+v["/memory/classes/metadata/mcache/free:bytes"]),
		g("go_memstats_mspan_inuse_bytes", "Bytes of mspan structures in use.", v["/memory/classes/metadata/mspan/inuse:bytes"]),
		g("go_memstats_mspan_sys_bytes", "Bytes of mspan structures obtained from the OS.", v["/memory/classes/metadata/mspan/inuse:bytes"]+v["/memory/classes/metadata/mspan/free:bytes"]),
		g("go_memstats_next_gc_bytes", "Heap size at which the next garbage collection starts.", v["/gc/heap/goal:bytes"]),
		g("go_memstats_other_sys_bytes", "Bytes of other runtime allocations.", v["/memory/classes/other:bytes"]),
		g("go_memstats_stack_inuse_bytes", "Bytes of goroutine stacks in use.", v["/memory/classes/heap/stacks:bytes"]),
		g("go_memstats_stack_sys_bytes", "Bytes of stacks obtained from the OS.", v["/memory/classes/heap/stacks:bytes"]+v["/memory/classes/os-stacks:bytes"]),
		g("go_memstats_sys_bytes", "Bytes obtained from the OS.", v["/memory/classes/total:bytes"]),
		g("go_sched_gomaxprocs_threads", "GOMAXPROCS: threads that may run Go code at once.", v["/sched/gomaxprocs:threads"]),
		g("go_threads", "OS threads created.", float64(threads)),
	}
}

// userHZ is the unit of the CPU times and start time in /proc/<pid>/stat
// (USER_HZ, 100 on every Linux Go supports).
const userHZ = 100

func processFamilies() []Family {
	var fams []Family
	add := func(typ, name, help string, value float64) {
		fams = append(fams, Family{Name: name, Help: help, Type: typ, Metrics: []Metric{{Value: value}}})
	}
	if st, ok := procStat(); ok {
		add(TypeCounter, "process_cpu_seconds_total", "User and system CPU time of the process, in seconds.", (st.utime+st.stime)/userHZ)
		add(TypeGauge, "process_resident_memory_bytes", "Resident memory of the process, in bytes.", st.rss*float64(os.Getpagesize()))
		add(TypeGauge, "process_virtual_memory_bytes", "Virtual memory of the process, in bytes.", st.vsize)
		if boot, ok := bootTime(); ok {
			add(TypeGauge, "process_start_time_seconds", "When the process started, in seconds since 1970.", boot+st.start/userHZ)
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		add(TypeGauge, "process_open_fds", "Open file descriptors.", float64(len(fds)))
	}
	if files, space, ok := procLimits(); ok {
		add(TypeGauge, "process_max_fds", "The limit of open file descriptors.", files)
		add(TypeGauge, "process_virtual_memory_max_bytes", "The limit of virtual memory, in bytes.", space)
	}
	if in, out, ok := procNetOctets(); ok {
		add(TypeCounter, "process_network_receive_bytes_total", "Bytes the process's network namespace received.", in)
		add(TypeCounter, "process_network_transmit_bytes_total", "Bytes the process's network namespace sent.", out)
	}
	return fams
}

type stat struct{ utime, stime, start, vsize, rss float64 }

// procStat reads /proc/self/stat (fields after the command name, which is
// in parentheses and may hold spaces).
func procStat() (stat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, starttime 22,
	// vsize 23, rss 24.
	if len(f) < 22 {
		return stat{}, false
	}
	n := func(field int) float64 {
		v, _ := strconv.ParseFloat(f[field-3], 64)
		return v
	}
	return stat{utime: n(14), stime: n(15), start: n(22), vsize: n(23), rss: n(24)}, true
}

// bootTime is the btime line of /proc/stat.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "btime "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// procLimits reads the soft limits of open files and address space from
// /proc/self/limits ("unlimited" is the largest uint64, as the kernel's
// RLIM_INFINITY).
func procLimits() (files, space float64, ok bool) {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, 0, false
	}
	soft := func(line string) float64 {
		f := strings.Fields(line[25:])
		if len(f) == 0 || f[0] == "unlimited" {
			return float64(^uint64(0))
		}
		v, _ := strconv.ParseFloat(f[0], 64)
		return v
	}
	var haveFiles, haveSpace bool
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case len(line) > 25 && strings.HasPrefix(line, "Max open files"):
			files, haveFiles = soft(line), true
		case len(line) > 25 && strings.HasPrefix(line, "Max address space"):
			space, haveSpace = soft(line), true
		}
	}
	return files, space, haveFiles && haveSpace
}

// procNetOctets reads InOctets and OutOctets of the IpExt lines of
// /proc/self/net/netstat (a header line of names, then one of values).
func procNetOctets() (in, out float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "IpExt:" || len(values) != len(names) || values[0] != "IpExt:" {
			continue
		}
		var haveIn, haveOut bool
		for k, name := range names {
			v, err := strconv.ParseFloat(values[k], 64)
			if err != nil {
				continue
			}
			switch name {
			case "InOctets":
				in, haveIn = v, true
			case "OutOctets":
				out, haveOut = v, true
			}
		}
		return in, out, haveIn && haveOut
	}
	return 0, 0, false
}
