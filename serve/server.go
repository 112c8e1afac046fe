package serve

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/accounts"
	"github.com/kwdata/kwdata/serve/agent"
	"github.com/kwdata/kwdata/serve/api"
	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/kwdata/kwdata/serve/pages"
	"github.com/kwdata/kwdata/serve/web"
)

// Options configures a Server. Zero fields take the documented defaults,
// filled in by New.
type Options struct {
	// Index answers lookups. Required: New panics without one, since a
	// server without an index is a wiring mistake, not a runtime state
	// (an index that is not loaded yet reports ok=false from Info).
	Index kw.Index
	// Logger receives access logs at Debug and failures at Warn and Error.
	// Default: a logger that discards everything.
	Logger *slog.Logger
	// Now is the clock of the build-age metric. Default: time.Now.
	Now func() time.Time
	// Access admits and counts lookups. Default: nil, which answers every
	// request and counts nothing (no access tiers).
	Access Access
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding the client address (see ClientAddr). Default: none, so the
	// client is always the connection's peer.
	TrustedProxies []netip.Prefix
	// Registry receives the server's metrics and is what GET /metrics
	// shows. It must not already hold kwdata_http_* or kwdata_index_*
	// metrics. Default: a new registry that also holds the Go runtime and
	// process collectors.
	Registry *prometheus.Registry
	// Registrar runs sign-up by email and key rotation (POST /v1/register,
	// /v1/register/verify, /v1/keys/rotate). Default: nil, and those
	// routes answer 404 not_found (keys come only from the operator).
	Registrar Registrar
	// Sessions signs people in by email code and keeps their sessions
	// (GET /account and the OAuth approval). Default: nil, and signing in
	// is off (a pasted key still shows its account).
	Sessions Sessions
	// OAuth keeps the clients, codes and tokens of agents that sign in
	// (POST /mcp/oauth). Default: nil, and the OAuth endpoints answer 404.
	OAuth oauth.Store
	// Mailer sends sign-up codes. Default: LogMailer on Logger, which
	// writes each message to the log instead of sending it.
	Mailer Mailer
	// Billing runs the paid tier's subscription (POST /v1/billing/*).
	// Default: nil, and those routes answer 501 billing_unavailable.
	Billing Billing
	// AllowedOrigins are web origins ("https://kwdata.example.com") whose
	// pages may call POST /mcp, besides pages on a loopback host. Each must
	// pass CanonicalOrigin; New panics otherwise. Default: none.
	AllowedOrigins []string
	// PublicURL is where clients reach the server ("https://kwdata.example.com",
	// optionally with a path prefix), for the absolute links of pages and
	// llms.txt. It must pass ParsePublicURL; New panics otherwise. The
	// request's Host is never used: a shared cache that does not key on
	// it would hand one client's Host to everyone. Default: empty, and
	// links are relative.
	PublicURL string
	// AnswerCacheBytes bounds the memory of ready GET /v1/keyword answers
	// kept for the served build (see web.AnswerCache). Default:
	// DefaultAnswerCacheBytes; negative turns the cache off.
	AnswerCacheBytes int64
}

// setDefaults fills in every default of Options; it is the only place that
// knows them.
func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Access == nil {
		o.Access = noAccess{}
	}
	if o.Mailer == nil {
		o.Mailer = LogMailer{Logger: o.Logger}
	}
	if o.AnswerCacheBytes == 0 {
		o.AnswerCacheBytes = DefaultAnswerCacheBytes
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
}

// Server is kwdata's HTTP handler. It is safe for concurrent use.
type Server struct {
	*web.Core // what every room reads: the index, access, accounts, billing

	metrics *metrics
	origins map[string]bool // CanonicalOrigin of Options.AllowedOrigins
	agent   *agent.Agent    // POST /mcp and POST /mcp/oauth

	// routes maps a path to its handlers by method. Paths are exact, except
	// for the prefixes in prefixRoutes.
	routes       map[string]*route
	prefixRoutes []*route
}

// handlerFunc is a handler that returns its failure instead of writing it;
// Server.ServeHTTP renders the failure as a problem document.
type handlerFunc = web.HandlerFunc

// route is one path and what it answers.
type route struct {
	pattern string // the metric label, e.g. "/v1/keyword" or "/problems/{code}"
	prefix  string // for a pattern ending in "{name}": the path before it
	methods map[string]handlerFunc
	allow   string // the Allow field of 405 answers
	cors    string // the methods pages of any origin may use (see corsShared); empty for none
}

// Route labels of requests that match no route.
const (
	routeUnmatched = "unmatched"
)

// New returns a Server answering from opt.Index.
func New(opt Options) *Server {
	if opt.Index == nil {
		panic("serve: Options.Index is nil")
	}
	opt.setDefaults()
	s := &Server{
		Core: &web.Core{
			Index:     opt.Index,
			Log:       opt.Logger,
			Now:       opt.Now,
			Access:    opt.Access,
			Trusted:   opt.TrustedProxies,
			Registrar: opt.Registrar,
			Sessions:  opt.Sessions,
			Mailer:    opt.Mailer,
			Billing:   opt.Billing,
		},
		routes:  map[string]*route{},
		origins: map[string]bool{},
	}
	s.SetAnswerCache(opt.AnswerCacheBytes)
	for _, o := range opt.AllowedOrigins {
		c, err := CanonicalOrigin(o)
		if err != nil {
			panic("serve: Options.AllowedOrigins: " + err.Error())
		}
		s.origins[c] = true
	}
	pub, err := ParsePublicURL(opt.PublicURL)
	if err != nil {
		panic("serve: Options.PublicURL: " + err.Error())
	}
	s.PublicURL = pub
	s.metrics = newMetrics(opt.Registry, s.Index, s.Now)
	s.Index = s.metrics.countDamage(s.Index)
	room := s.newOAuthRoom(opt)
	signIn := ""
	if room != nil {
		signIn = s.PublicURL + oauth.ResourcePath
	}
	s.agent = agent.New(s.Core, s.origins, signIn)
	s.handle("GET /healthz", s.handleHealthz)
	s.handle("GET /readyz", s.handleReadyz)
	s.handle("GET /metrics", s.metrics.handle)
	s.handle("GET /problems/{code}", s.handleProblem)
	s.mount(api.New(s.Core).Routes())
	s.mount(accounts.New(s.Core).Routes())
	s.mount(pages.New(s.Core).Routes())
	s.mount(s.agent.Routes())
	s.mountOAuth(room)
	return s
}

// handle registers h for "METHOD /path". A final "{name}" segment matches
// any rest of the path (the route is a prefix); the pattern, not the path,
// labels the metrics. GET routes answer HEAD too.
func (s *Server) handle(pattern string, h handlerFunc) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic("serve: route pattern " + pattern + " has no method")
	}
	rt := s.routes[path]
	if rt == nil {
		rt = &route{pattern: path, methods: map[string]handlerFunc{}}
		if i := strings.LastIndexByte(path, '/'); strings.HasPrefix(path[i+1:], "{") && strings.HasSuffix(path, "}") {
			rt.prefix = path[:i+1]
			s.prefixRoutes = append(s.prefixRoutes, rt)
		}
		s.routes[path] = rt
	}
	rt.methods[method] = h
	if method == http.MethodGet {
		rt.methods[http.MethodHead] = h
	}
	var ms, shared []string
	for m := range rt.methods {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	for _, m := range ms {
		if corsShared(m, path) {
			shared = append(shared, m)
		}
	}
	rt.allow = strings.Join(ms, ", ")
	rt.cors = strings.Join(shared, ", ")
}

// mount registers the routes of a room.
func (s *Server) mount(routes []web.Route) {
	for _, rt := range routes {
		h := rt.Handler
		if rt.Private {
			h = private(h)
		}
		s.handle(rt.Pattern, h)
	}
}

// private marks every answer of h, refusals included, as
// web.CacheControlPrivate.
func private(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header()["Cache-Control"] = web.CacheControlPrivate
		return h(w, r)
	}
}

// match finds the route of a path, or nil.
func (s *Server) match(path string) *route {
	if rt := s.routes[path]; rt != nil && rt.prefix == "" { // exact paths first
		return rt
	}
	for _, rt := range s.prefixRoutes {
		if strings.HasPrefix(path, rt.prefix) {
			return rt
		}
	}
	return nil
}

// ServeHTTP routes the request, renders handler failures as problem
// documents, turns panics into 500 problems, and records metrics and the
// access log.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := sinceEpoch()
	rt := s.match(r.URL.Path)
	label := routeUnmatched
	if rt != nil {
		label = rt.pattern
	}
	sw := statusWriters.Get().(*statusWriter)
	sw.ResponseWriter = w
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				s.finish(sw, r, label, start)
				panic(p)
			}
			s.Log.LogAttrs(r.Context(), slog.LevelError, "handler panicked",
				slog.String("route", label), slog.String("path", r.URL.Path),
				slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			if sw.status == 0 {
				web.WriteProblem(sw, HTTPError{Status: http.StatusInternalServerError, Code: CodeInternal,
					Msg: "The server failed to answer this request; retrying may help."})
			}
		}
		s.finish(sw, r, label, start)
		*sw = statusWriter{} // an aborted request re-panicked above and leaves sw to the collector
		statusWriters.Put(sw)
	}()
	sw.Header()["X-Content-Type-Options"] = nosniffValue
	cors := rt != nil && rt.cors != ""
	if cors {
		setCORS(sw.Header())
	}

	var err error
	switch h := rt.handlerFor(r.Method); {
	case cors && r.Method == http.MethodOptions:
		preflight(sw, rt.cors, rt.allow)
	case rt == nil:
		err = HTTPError{Status: http.StatusNotFound, Code: CodeNotFound,
			Msg: fmt.Sprintf("Nothing lives at %s; the API is under /v1/ (GET /v1/keyword, GET /v1/countries).", r.URL.Path)}
	case h == nil:
		err = HTTPError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Msg:    fmt.Sprintf("%s does not accept %s; use %s.", rt.pattern, r.Method, rt.allow),
			Header: http.Header{"Allow": {rt.allow}}}
	default:
		err = h(sw, r)
	}
	if err != nil {
		if sw.status != 0 {
			// The answer has begun; the failure can only be logged.
			s.Log.LogAttrs(r.Context(), slog.LevelWarn, "request failed after the answer began",
				slog.String("route", label), slog.Any("err", err))
			return
		}
		s.writeError(sw, r, label, err)
	}
}

func (rt *route) handlerFor(method string) handlerFunc {
	if rt == nil {
		return nil
	}
	return rt.methods[method]
}

// epoch is the origin of request timings. time.Now reads two clocks (the
// wall clock and the monotonic one); time.Since of a time that carries a
// monotonic reading reads only the monotonic clock, which is all a
// duration needs: one clock read less on every request.
var epoch = time.Now()

// sinceEpoch is the monotonic time since epoch.
func sinceEpoch() time.Duration { return time.Since(epoch) }

// finish records the metrics and the access log of a request that began
// at start (a sinceEpoch reading).
func (s *Server) finish(sw *statusWriter, r *http.Request, label string, start time.Duration) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	d := sinceEpoch() - start
	s.metrics.observe(label, sw.status, d)
	if s.Log.Enabled(r.Context(), slog.LevelDebug) {
		s.Log.LogAttrs(r.Context(), slog.LevelDebug, "request",
			slog.String("method", r.Method), slog.String("route", label),
			slog.String("uri", r.URL.RequestURI()), slog.Int("status", sw.status),
			slog.Int64("bytes", sw.bytes), slog.Duration("duration", d),
			slog.String("client", s.ClientAddr(r).String()))
	}
}

// statusWriters recycles the statusWriter of each request: one allocation
// less on every answer. Handlers never keep their ResponseWriter beyond
// their return.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// statusWriter remembers the status and size of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// handleHealthz answers 200 while the process runs.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) error {
	writeText(w, http.StatusOK, "ok\n")
	return nil
}

// handleReadyz answers 200 once an index is loaded and while Access (if it
// is a Readier) is ready; 503 while no index is, while the served one is
// damaged (a load balancer then sends the lookups to a server that can
// answer them all), or while Access is not.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	info, ok := s.Index.Info()
	if !ok {
		return fmt.Errorf("cannot report ready: %w", kw.ErrNoIndex)
	}
	if info.Damaged != "" {
		return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeIndexUnavailable,
			Msg:    fmt.Sprintf("The served index build %s is damaged (%s); the server is loading the published build again.", info.Version, info.Damaged),
			Err:    kw.ErrIndexDamaged,
			Header: http.Header{"Retry-After": {"30"}}}
	}
	if rd, ok := s.Access.(Readier); ok {
		if err := rd.Ready(); err != nil {
			return fmt.Errorf("cannot report ready: %w: %w", ErrNotReady, err)
		}
	}
	writeText(w, http.StatusOK, "ok\n")
	return nil
}

// handleProblem describes a problem code: the target of every problem
// document's "type".
func (s *Server) handleProblem(w http.ResponseWriter, r *http.Request) error {
	code := strings.TrimPrefix(r.URL.Path, web.ProblemTypePrefix)
	info, ok := web.Problems[code]
	if !ok {
		return HTTPError{Status: http.StatusNotFound, Code: CodeNotFound,
			Msg: fmt.Sprintf("There is no problem type %q.", code)}
	}
	writeText(w, http.StatusOK, info.Title+"\n\n"+info.About+"\n")
	return nil
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	io.WriteString(w, body)
}
