package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kwdata/kwdata/kw"
)

// metrics are the server's Prometheus metrics. Route labels are route
// patterns, never raw paths, so a scan of random URLs cannot blow up the
// number of series.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler

	// children caches the counter and histogram of each route and status,
	// since WithLabelValues hashes its labels on every call.
	mu       sync.RWMutex
	children map[routeStatus]child
}

type child struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

type routeStatus struct {
	route  string
	status int
}

func newMetrics(reg *prometheus.Registry, idx kw.Index, now func() time.Time) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kwdata_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kwdata_http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by route pattern and status class (2xx, 3xx, 4xx, 5xx).",
			// Index lookups take tens of microseconds; the buckets start
			// low enough to see them.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "status"}),
		children: map[routeStatus]child{},
	}
	info := func() (kw.IndexInfo, bool) { return idx.Info() }
	reg.MustRegister(
		m.requests, m.latency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kwdata_index_ready",
			Help: "1 while an index is loaded, else 0.",
		}, func() float64 {
			if _, ok := info(); ok {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kwdata_index_data_date_seconds",
			Help: "Data date of the served index as a Unix time (UTC midnight); 0 while none is loaded.",
		}, func() float64 {
			i, ok := info()
			if !ok {
				return 0
			}
			d, err := time.Parse(kw.DateLayout, i.DataDate)
			if err != nil {
				return 0
			}
			return float64(d.Unix())
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kwdata_index_build_age_seconds",
			Help: "Seconds since the served index was built; 0 while none is loaded.",
		}, func() float64 {
			i, ok := info()
			if !ok || i.BuiltAt.IsZero() {
				return 0
			}
			return now().Sub(i.BuiltAt).Seconds()
		}),
	)
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return m
}

// observe records one answered request.
func (m *metrics) observe(route string, status int, d time.Duration) {
	key := routeStatus{route, status}
	m.mu.RLock()
	c, ok := m.children[key]
	m.mu.RUnlock()
	if !ok {
		c = child{
			requests: m.requests.WithLabelValues(route, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(route, statusClass(status)),
		}
		m.mu.Lock()
		m.children[key] = c
		m.mu.Unlock()
	}
	c.requests.Inc()
	c.latency.Observe(d.Seconds())
}

// statusClass is the latency label of a status: its class ("2xx"), not
// the code. A histogram is fifteen series per label set, so codes would
// multiply them; the class still tells fast refusals (4xx) from answers.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// handle answers GET /metrics in the Prometheus text format.
func (m *metrics) handle(w http.ResponseWriter, r *http.Request) error {
	m.handler.ServeHTTP(w, r)
	return nil
}

// NewRegistry returns a registry holding the Go runtime and process
// collectors, like the default of Options.Registry. Build one when other
// collectors (IndexInfoCollector, the access tiers' counters) must share
// the server's GET /metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// IndexInfoCollector exposes kwdata_index_info{build,data_date,format_version}
// with the value 1 for the index idx serves, and no series while none is
// loaded. formatVersion is the index format the serving binary reads; the
// index refuses any other, so it is the served one's too. The labels are
// read on each scrape, so a swap shows at the next one.
func IndexInfoCollector(idx kw.Index, formatVersion int) prometheus.Collector {
	return indexInfo{
		idx:     idx,
		version: strconv.Itoa(formatVersion),
		desc: prometheus.NewDesc("kwdata_index_info",
			"The served index: build id, data date and format version; always 1.",
			[]string{"build", "data_date", "format_version"}, nil),
	}
}

type indexInfo struct {
	idx     kw.Index
	version string
	desc    *prometheus.Desc
}

func (c indexInfo) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c indexInfo) Collect(ch chan<- prometheus.Metric) {
	i, ok := c.idx.Info()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, i.Version, i.DataDate, c.version)
}
