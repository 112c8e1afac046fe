package serve

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// metrics are the server's Prometheus metrics. Route labels are route
// patterns, never raw paths, so a scan of random URLs cannot blow up the
// number of series.
type metrics struct {
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	damaged    prometheus.Counter
	bodyErrors *prometheus.CounterVec
	handler    http.Handler

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
		damaged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kwdata_index_damaged_lookups_total",
			Help: "Lookups that could not read the served index (a damaged file) and were answered 503 index_unavailable.",
		}),
		bodyErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kwdata_http_body_errors_total",
			Help: "Requests whose body the client failed to deliver (reason: malformed, incomplete, timeout); the client's fault, answered 400 or, with the client gone, 499.",
		}, []string{"route", "reason"}),
		children: map[routeStatus]child{},
	}
	info := func() (kw.IndexInfo, bool) { return idx.Info() }
	reg.MustRegister(
		m.requests, m.latency, m.damaged, m.bodyErrors,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kwdata_index_ready",
			Help: "1 while an index is loaded and reads cleanly (GET /readyz answers 200), else 0.",
		}, func() float64 {
			if i, ok := info(); ok && i.Damaged == "" {
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

// countDamage returns idx with every lookup that meets a damaged index
// counted, whichever route (API, page, bulk, MCP) made it.
func (m *metrics) countDamage(idx kw.Index) kw.Index { return web.CountDamage(idx, m.damaged) }

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

// bodyError counts a request body the client failed to deliver.
func (m *metrics) bodyError(route, reason string) {
	m.bodyErrors.WithLabelValues(route, reason).Inc()
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

// lastSuccessTTL is how long PipelineLastSuccess keeps a value: the history
// changes once a night, so re-reading it on every scrape would be waste.
const lastSuccessTTL = 30 * time.Second

// PipelineLastSuccess exposes kwdata_pipeline_last_success_timestamp_seconds:
// when the newest successful pipeline run ended, as a Unix time, 0 before
// any. read returns that time (zero for none), from the run history of the
// data folder the server shares with the pipeline; it is called on a
// scrape at most once every 30 seconds. A read that fails is logged and the
// previous value stays. now is the clock (time.Now when nil).
func PipelineLastSuccess(read func() (time.Time, error), now func() time.Time, log *slog.Logger) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &lastSuccess{read: read, now: now, log: log}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kwdata_pipeline_last_success_timestamp_seconds",
		Help: "When the newest successful pipeline run ended (Unix time, from the run history; re-read at most every 30 s); 0 before any.",
	}, c.value)
}

type lastSuccess struct {
	read func() (time.Time, error)
	now  func() time.Time
	log  *slog.Logger

	mu     sync.Mutex
	readAt time.Time // zero: never read
	last   float64
}

func (c *lastSuccess) value() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < lastSuccessTTL {
		return c.last
	}
	c.readAt = now
	t, err := c.read()
	switch {
	case err != nil:
		c.log.Warn("cannot read the pipeline's last successful run; /metrics keeps the previous value", "err", err)
	case t.IsZero():
		c.last = 0
	default:
		c.last = float64(t.UnixNano()) / 1e9
	}
	return c.last
}
