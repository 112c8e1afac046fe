package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/index/objstore"
	"github.com/kwdata/kwdata/pipelines"
	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
	"github.com/kwdata/kwdata/serve/billing"
	"github.com/kwdata/kwdata/serve/mail"
	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/prometheus/client_golang/prometheus"
)

// serveConfig is what serve and demo share.
type serveConfig struct {
	data, addr string
	trusted    []netip.Prefix
	// allowedOrigins are web origins ("https://kwdata.example.com") whose
	// pages may call POST /mcp. Default: none; programs (no Origin) and
	// pages on a loopback host may always call it.
	allowedOrigins []string
	// pprof, if not empty, is the address of a separate listener for
	// net/http/pprof; never the public one.
	pprof string
	// cacheMB sizes the index's block cache in MiB. Default (0): the
	// index package's, 256 MiB.
	cacheMB int
	// answerCacheBytes bounds the ready answers the server keeps, as
	// serve.Options.AnswerCacheBytes. Default (0): serve's, 64 MiB.
	answerCacheBytes int64
	// publicURL is where clients reach the server, for absolute links in
	// pages and llms.txt. Default (empty): the listening address when it
	// names one host, else relative links (see defaultPublicURL).
	publicURL string
	// ready, if set, receives the listening address once the server accepts.
	ready func(addr string)
	// listener, if set, is already bound to addr (demo binds before its
	// stages, so a busy port fails first, not after them).
	listener net.Listener
	// mailer sends sign-up codes. Default (nil): each message is written
	// to the log instead, and the start says so.
	mailer serve.Mailer
	// stripe configures billing; nil without --stripe-price, and the
	// billing endpoints answer 501.
	stripe *billing.Options
	// index, if set, is the s3://BUCKET/PREFIX whose published build
	// the server downloads into data and serves; s3Endpoint is the
	// store's URL for stores other than AWS S3.
	index, s3Endpoint string
	// access is the Redis URL of a shared access store. Default (empty):
	// the embedded store in <data>/access.
	access string
	// lockHeld says the caller holds the server lock of data already
	// (demo takes it before its stages); serve takes it otherwise.
	lockHeld bool
}

func (m *Main) runServe(ctx context.Context, args []string) error {
	fs := m.newFlagSet("serve", "--data DIR [--addr 127.0.0.1:8080] [--public-url URL] [--cache-mb 256] [--answer-cache-mb 64] [--trusted-proxy CIDR]... [--allowed-origin ORIGIN]... [--pprof 127.0.0.1:6060] [--smtp-url smtp://user@host:587 --mail-from ADDR] [--stripe-price price_… [--stripe-webhook-secret S] [--stripe-api URL]] [--index s3://BUCKET/PREFIX [--s3-endpoint URL]] [--access redis://HOST:6379/0]")
	data := fs.String("data", "", "data folder (required)")
	addr := fs.String("addr", serve.DefaultAddr, "address to listen on")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this separate address; off by default")
	publicURL := fs.String("public-url", "", "URL clients reach the server at, e.g. https://kwdata.example.com, for absolute links in pages and llms.txt (default: http://ADDR when --addr names one host, else relative links; never the request's Host)")
	cacheMB := fs.Int("cache-mb", 256, "MiB of memory for the index's block cache (outside the Go heap); the build's size keeps all of it in memory")
	answerMB := fs.Int("answer-cache-mb", serve.DefaultAnswerCacheBytes>>20, "MiB of ready GET /v1/keyword answers kept for the served build (in the Go heap); 0 turns it off")
	smtpURL := fs.String("smtp-url", "", "SMTP server for sign-up codes, smtp://user:pass@host:587 (STARTTLS when offered, required with a login) or smtps://host:465; the password may instead come from $"+smtpPasswordEnv+" (default: write each message to the log)")
	mailFrom := fs.String("mail-from", "", "sender of sign-up mail, e.g. \"kwdata <no-reply@example.com>\" (required with --smtp-url)")
	stripePrice := fs.String("stripe-price", "", "Stripe price of the paid tier, price_…; turns billing on, with the secret key from $STRIPE_SECRET_KEY (default: no billing; POST /v1/billing/* answer 501)")
	stripeHook := fs.String("stripe-webhook-secret", "", "secret that signs Stripe's webhook events, whsec_… (default: $STRIPE_WEBHOOK_SECRET)")
	stripeAPI := fs.String("stripe-api", "", "base URL of Stripe's API, for tests against stripe-mock (default: Stripe's)")
	indexURL := fs.String("index", "", "s3://BUCKET/PREFIX: download each build published there (kwdata build-index --publish) into --data and serve it (default: serve the builds of --data)")
	var s3 s3Flags
	s3.register(fs)
	accessURL := fs.String("access", "", accessFlagHelp)
	var proxies stringList
	fs.Var(&proxies, "trusted-proxy", "CIDR of a reverse proxy whose X-Forwarded-For is believed (repeatable)")
	var origins stringList
	fs.Var(&origins, "allowed-origin", "web origin, e.g. https://kwdata.example.com, whose pages may call POST /mcp (repeatable); default none besides localhost")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"data", *data}); err != nil {
		return err
	}
	if *cacheMB < 1 {
		return usageError{fmt.Errorf("--cache-mb is %d; write 1 or more", *cacheMB)}
	}
	if *answerMB < 0 {
		return usageError{fmt.Errorf("--answer-cache-mb is %d; write 0 (off) or more", *answerMB)}
	}
	cfg := serveConfig{data: *data, addr: *addr, pprof: *pprofAddr, allowedOrigins: origins, cacheMB: *cacheMB,
		answerCacheBytes: int64(*answerMB) << 20}
	if *answerMB == 0 {
		cfg.answerCacheBytes = -1
	}
	pub, err := serve.ParsePublicURL(*publicURL)
	if err != nil {
		return usageError{fmt.Errorf("--public-url: %w", err)}
	}
	cfg.publicURL = pub
	if *smtpURL != "" {
		sender, err := mail.NewSMTP(*smtpURL, m.getenv(smtpPasswordEnv), *mailFrom)
		if err != nil {
			return usageError{fmt.Errorf("--smtp-url: %w", err)}
		}
		cfg.mailer = sender
	} else if *mailFrom != "" {
		return usageError{errors.New("--mail-from needs --smtp-url; without it, mail is written to the log")}
	}
	if err := checkAccessURL(*accessURL); err != nil {
		return err
	}
	cfg.access = *accessURL
	if *stripePrice != "" {
		hook := *stripeHook
		if hook == "" {
			hook = m.getenv("STRIPE_WEBHOOK_SECRET")
		}
		cfg.stripe = &billing.Options{SecretKey: m.getenv("STRIPE_SECRET_KEY"), WebhookSecret: hook, Price: *stripePrice, API: *stripeAPI}
		if cfg.stripe.SecretKey == "" || hook == "" {
			return usageError{errors.New("--stripe-price needs STRIPE_SECRET_KEY and a webhook secret (--stripe-webhook-secret or STRIPE_WEBHOOK_SECRET) in the environment")}
		}
	} else if *stripeHook != "" || *stripeAPI != "" {
		return usageError{errors.New("--stripe-webhook-secret and --stripe-api need --stripe-price")}
	}
	for _, o := range origins {
		if _, err := serve.CanonicalOrigin(o); err != nil {
			return usageError{fmt.Errorf("--allowed-origin: %w", err)}
		}
	}
	for _, p := range proxies {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return usageError{fmt.Errorf("--trusted-proxy %q is not a CIDR such as 10.0.0.0/8", p)}
			}
			pfx = netip.PrefixFrom(addr, addr.BitLen())
		}
		cfg.trusted = append(cfg.trusted, pfx.Masked())
	}
	if *indexURL != "" {
		if _, err := objstore.ParseURL(*indexURL); err != nil {
			return usageError{fmt.Errorf("--index: %w", err)}
		}
		cfg.index, cfg.s3Endpoint = *indexURL, *s3.endpoint
	} else if *s3.endpoint != "" {
		return usageError{errors.New("--s3-endpoint needs --index s3://BUCKET/PREFIX")}
	}
	if err := existingData(*data); err != nil {
		return err
	}
	return m.serve(ctx, cfg)
}

// smtpPasswordEnv holds the SMTP password when it should not appear on
// the command line (and so in the process list).
const smtpPasswordEnv = "KWDATA_SMTP_PASSWORD"

// serve opens the index store, answers HTTP on cfg.addr until ctx is done,
// and reloads the index on SIGHUP.
func (m *Main) serve(ctx context.Context, cfg serveConfig) error {
	if !cfg.lockHeld {
		release, err := m.lockServer(cfg.data)
		if err != nil {
			return err
		}
		defer release()
	}
	store, err := m.openIndexStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	// One registry, so GET /metrics shows the index and the access tiers
	// next to the server's own metrics.
	reg := serve.NewRegistry()
	var sync *objstore.Syncer
	if cfg.index != "" {
		if sync, err = m.startIndexSync(ctx, cfg, store, reg); err != nil {
			return err
		}
	}
	defer m.reloadOnSIGHUP(ctx, store, sync)()
	m.registerIndexMetrics(reg, store, cfg.data)
	acc, closeAccess, err := m.openServeAccess(ctx, cfg, reg)
	if err != nil {
		return err
	}
	// serve.Serve returns only after in-flight requests have drained, so
	// closing the access store after it flushes every lookup counted.
	defer closeAccess()
	ln := cfg.listener
	if ln == nil {
		if ln, err = listen(cfg.addr, flagAddrHint); err != nil {
			return err
		}
	}
	if cfg.publicURL == "" {
		cfg.publicURL = defaultPublicURL(ln.Addr())
	}
	cfg.mailer = m.signupMailer(cfg.mailer, acc.registrar)
	bill, err := m.openBilling(cfg, acc.accounts)
	if err != nil {
		ln.Close()
		return err
	}
	h := serve.New(serve.Options{
		Index: store, Logger: m.Logger.With("component", "http"), TrustedProxies: cfg.trusted,
		Access: acc.adapter, Registrar: acc.registrar, Sessions: acc.sessions, OAuth: acc.oauth, Mailer: cfg.mailer, Billing: bill, Registry: reg, AllowedOrigins: cfg.allowedOrigins,
		PublicURL: cfg.publicURL, AnswerCacheBytes: cfg.answerCacheBytes, Now: m.now,
	})
	if cfg.pprof != "" {
		_, stop, err := m.servePprof(cfg.pprof)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	if cfg.ready != nil {
		cfg.ready(ln.Addr().String())
	}
	return serve.Serve(ctx, ln, h, m.Logger.With("component", "http"))
}

// openIndexStore opens the store that serves the builds of cfg.data.
func (m *Main) openIndexStore(ctx context.Context, cfg serveConfig) (*index.Store, error) {
	store, err := index.OpenStore(ctx, cfg.data, index.StoreOptions{
		Logger: m.Logger.With("component", "index"), CacheBytes: int64(cfg.cacheMB) << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot open the index: %w", err)
	}
	return store, nil
}

// reloadOnSIGHUP makes SIGHUP look for a new build at once (and ask the
// bucket's syncer, if any, first) until ctx is done; stop ends it.
func (m *Main) reloadOnSIGHUP(ctx context.Context, store *index.Store, sync *objstore.Syncer) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if sync != nil {
					sync.Trigger()
				}
				if err := store.Reload(); err != nil {
					m.Logger.Error("reload refused", "err", err)
				}
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

// registerIndexMetrics adds the served build and the pipeline's last
// success to reg.
func (m *Main) registerIndexMetrics(reg prometheus.Registerer, store *index.Store, data string) {
	reg.MustRegister(serve.IndexInfoCollector(store, index.FormatVersion))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "kwdata_index_checks_total",
		Help: "Checks of the published index pointer (CURRENT) finished by this server, whatever they found.",
	}, func() float64 { return float64(store.Checks()) }))
	// The run history of a pipeline sharing this data folder says when the
	// last good run ended: a pipeline that stops succeeding shows here
	// even while the served build is still young. 0 on a host without one.
	reg.MustRegister(serve.PipelineLastSuccess(func() (time.Time, error) {
		end, _, err := pipelines.LastSuccess(data)
		return end, err
	}, nil, m.Logger.With("component", "metrics")))
}

// serveAccess is what the server needs of its access store.
type serveAccess struct {
	adapter   serve.Access
	registrar serve.Registrar  // nil: no self-registration
	sessions  serve.Sessions   // nil: no signing in
	oauth     oauth.Store      // nil: no sign-in for agents
	accounts  billing.Accounts // nil: no billing
}

// openServeAccess opens the access store: the shared one in Redis when
// cfg.access names it, else the embedded one in <data>/access. closeAccess
// flushes what it counted and closes it.
func (m *Main) openServeAccess(ctx context.Context, cfg serveConfig, reg prometheus.Registerer) (acc serveAccess, closeAccess func(), err error) {
	if cfg.access != "" {
		rs, err := m.openRedisAccess(ctx, cfg.access, access.Options{
			Logger: m.Logger.With("component", "access"), Metrics: access.NewMetrics(reg), Now: m.now,
		})
		if err != nil {
			return acc, nil, err
		}
		m.Logger.Info("keys, lookup counts, sign-ups and billing are shared in Redis", "redis", redactedURL(cfg.access))
		a := rs.ForServer()
		return serveAccess{a, a, a, rs.ForOAuth(), a.ForBilling()}, func() {
			if err := rs.Close(); err != nil {
				m.Logger.Error("cannot flush the paid lookups", "err", err)
			}
		}, nil
	}
	st, err := access.Open(access.Options{
		Dir: accessDir(cfg.data), Logger: m.Logger.With("component", "access"), Now: m.now,
		Metrics: access.NewMetrics(reg),
	})
	if err != nil {
		return acc, nil, fmt.Errorf("cannot open the access store: %w", err)
	}
	a := st.ForServer()
	return serveAccess{a, a, a, st.ForOAuth(), a.ForBilling()}, func() {
		if err := st.Close(); err != nil {
			m.Logger.Error("cannot flush the access counters", "err", err)
		}
	}, nil
}

// signupMailer is the mailer of sign-up codes: none without a registrar,
// the log when no SMTP server is configured, else the configured one.
func (m *Main) signupMailer(mailer serve.Mailer, registrar serve.Registrar) serve.Mailer {
	switch {
	case registrar == nil:
		return nil
	case mailer == nil:
		m.Logger.Warn("no --smtp-url: sign-up codes are written to this log, not mailed")
		return serve.LogMailer{Logger: m.Logger.With("component", "mail")}
	default:
		m.Logger.Info("sign-up codes are mailed", "smtp", mailer)
		return mailer
	}
}

// openBilling sets up Stripe billing when cfg.stripe configures it; nil
// (the billing endpoints answer 501) otherwise.
func (m *Main) openBilling(cfg serveConfig, accounts billing.Accounts) (serve.Billing, error) {
	if cfg.stripe == nil {
		m.Logger.Info("no --stripe-price: billing is off; the paid tier comes from kwdata keys set-tier")
		return nil, nil
	}
	opt := *cfg.stripe
	opt.PublicURL, opt.Logger = strings.TrimSuffix(cfg.publicURL, "/"), m.Logger.With("component", "billing")
	st, err := billing.New(opt, accounts)
	if err != nil {
		return nil, fmt.Errorf("cannot set up billing: %w", err)
	}
	m.Logger.Info("billing through Stripe", "price", opt.Price)
	return st, nil
}

// defaultPublicURL is the public URL of a server without --public-url:
// http:// and the listening address when that names one host (what the
// demo and a single-host setup want in the commands their pages show),
// and "" (relative links) when it is every interface, which names no host
// a client could use.
func defaultPublicURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		return ""
	}
	return "http://" + tcp.String()
}

// servePprof serves net/http/pprof on its own listener, so the profiler is
// never reachable on the public address. It returns the address it
// listens on; stop closes it.
func (m *Main) servePprof(addr string) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("cannot listen on %s for --pprof: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	m.Logger.Warn("profiler listening; keep this address private", "addr", ln.Addr().String())
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// listen binds addr, and says how to pick another address when it is taken.
// addrHint is how the reader names another address, with %s for it:
// "--addr %s" on the command line, "make demo ADDR=%s" under make.
func listen(addr, addrHint string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("cannot listen on %s: the address is already in use; stop what listens there, or pick a free port: %s", addr, fmt.Sprintf(addrHint, "127.0.0.1:8081"))
	}
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w; pick another address: %s", addr, err, fmt.Sprintf(addrHint, "127.0.0.1:8081"))
	}
	return ln, nil
}

// flagAddrHint names another address on kwdata's command line.
const flagAddrHint = "--addr %s"

// makeDemoEnv is set by the Makefile's demo target, so that the demo's
// hints name make's ADDR= rather than the --addr make passes for it.
const makeDemoEnv = "KWDATA_MAKE_DEMO"
