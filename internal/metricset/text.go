package metricset

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The metric types of the text exposition.
const (
	TypeCounter   = "counter"
	TypeGauge     = "gauge"
	TypeHistogram = "histogram"
	TypeSummary   = "summary"
)

// Family is one metric family of the Prometheus text exposition.
type Family struct {
	Name    string
	Help    string
	Type    string
	Metrics []Metric
}

// Metric is one series of a family: Value for counters and gauges; Buckets
// (cumulative counts, +Inf left out), Count and Sum for histograms;
// Quantiles, Count and Sum for summaries.
type Metric struct {
	Labels    []Label
	Value     float64
	Buckets   []Bucket
	Quantiles []Quantile
	Count     uint64
	Sum       float64
}

// Label is one label of a series.
type Label struct{ Name, Value string }

// Bucket is a histogram bucket: how many observations were at most
// UpperBound.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Quantile is one quantile of a summary.
type Quantile struct{ Quantile, Value float64 }

// ContentType is the text exposition's content type (format 0.0.4).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Source returns families at each scrape; ctx ends with the request.
type Source func(ctx context.Context) []Family

// Handler serves the families the sources return at each scrape in the
// text format, gzipped when the scraper accepts it (as Prometheus does).
// It is this package's stand-in for client_golang's promhttp: the series
// come out as client_golang writes them (families by name, labels by name,
// series by label values), so a scraper sees no difference.
func Handler(sources ...Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams := make([]Family, 0, 64)
		for _, src := range sources {
			fams = append(fams, src(r.Context())...)
		}
		w.Header().Set("Content-Type", ContentType)
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer func() { _ = gz.Close() }() // the response is sent; nobody to tell
			out = gz
		}
		_ = Write(out, fams)
	})
}

func acceptsGzip(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		enc, _, _ := strings.Cut(part, ";")
		if strings.TrimSpace(enc) == "gzip" {
			return true
		}
	}
	return false
}

// Write writes fams in the Prometheus text format. Families are sorted by
// name, each series' labels by name and the series by their label values;
// families without series are left out.
func Write(w io.Writer, fams []Family) error {
	fams = slices.Clone(fams)
	slices.SortStableFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		if len(f.Metrics) == 0 {
			continue
		}
		ms := make([]Metric, len(f.Metrics))
		for i, m := range f.Metrics {
			m.Labels = slices.Clone(m.Labels)
			slices.SortFunc(m.Labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
			ms[i] = m
		}
		slices.SortStableFunc(ms, compareLabelValues)
		bw.WriteString("# HELP " + f.Name + " " + escapeHelp(f.Help) + "\n")
		bw.WriteString("# TYPE " + f.Name + " " + f.Type + "\n")
		for _, m := range ms {
			switch f.Type {
			case TypeHistogram:
				for _, b := range m.Buckets {
					sample(bw, f.Name+"_bucket", m.Labels, Label{"le", formatFloat(b.UpperBound)}, strconv.FormatUint(b.Count, 10))
				}
				sample(bw, f.Name+"_bucket", m.Labels, Label{"le", "+Inf"}, strconv.FormatUint(m.Count, 10))
				sample(bw, f.Name+"_sum", m.Labels, Label{}, formatFloat(m.Sum))
				sample(bw, f.Name+"_count", m.Labels, Label{}, strconv.FormatUint(m.Count, 10))
			case TypeSummary:
				for _, q := range m.Quantiles {
					sample(bw, f.Name, m.Labels, Label{"quantile", formatFloat(q.Quantile)}, formatFloat(q.Value))
				}
				sample(bw, f.Name+"_sum", m.Labels, Label{}, formatFloat(m.Sum))
				sample(bw, f.Name+"_count", m.Labels, Label{}, strconv.FormatUint(m.Count, 10))
			default:
				sample(bw, f.Name, m.Labels, Label{}, formatFloat(m.Value))
			}
		}
	}
	return bw.Flush()
}

func compareLabelValues(a, b Metric) int {
	for i := range min(len(a.Labels), len(b.Labels)) {
		if c := strings.Compare(a.Labels[i].Value, b.Labels[i].Value); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a.Labels), len(b.Labels))
}

// sample writes one line: name{labels,extra} value (extra left out when its
// name is empty).
func sample(w *bufio.Writer, name string, labels []Label, extra Label, value string) {
	w.WriteString(name)
	if len(labels) > 0 || extra.Name != "" {
		w.WriteByte('{')
		sep := ""
		for _, l := range append(labels, extra) {
			if l.Name == "" {
				continue
			}
			w.WriteString(sep + l.Name + `="` + escapeLabel(l.Value) + `"`)
			sep = ","
		}
		w.WriteByte('}')
	}
	w.WriteString(" " + value + "\n")
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// formatFloat writes a value as the text format does: shortest form, +Inf,
// -Inf and NaN spelled out.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
