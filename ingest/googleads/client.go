package googleads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kwdata/kwdata/ingest/internal/retry"

	"golang.org/x/oauth2"
)

// Defaults of Config.
const (
	DefaultEndpoint          = "https://googleads.googleapis.com"
	DefaultAPIVersion        = "v26"
	DefaultTokenURL          = "https://oauth2.googleapis.com/token"
	DefaultRequestsPerSecond = 1
)

// MaxKeywordsPerRequest is the documented limit of keywords in one
// GenerateKeywordHistoricalMetrics request.
const MaxKeywordsPerRequest = 10_000

// MaxSeedKeywords is the limit of seed keywords in one GenerateKeywordIdeas
// request.
const MaxSeedKeywords = 20

// Source is the value of KeywordRecord.Source for records from this client.
const Source = "googleads"

// Config holds the account and credentials. The googleads section of
// kwdata's configuration file decodes straight into it (the yaml tags are
// its keys); WithDefaults fills the default named on each field.
type Config struct {
	// Endpoint is the API root. Default DefaultEndpoint; tests point it
	// at a fake.
	Endpoint string `yaml:"endpoint"`
	// APIVersion is the REST version path element, e.g. "v22". Default
	// DefaultAPIVersion, the version the client is written against.
	APIVersion string `yaml:"api_version"`
	// CustomerID is the account the planner runs as (digits; dashes are
	// removed). Required.
	CustomerID string `yaml:"customer_id"`
	// LoginCustomerID is the manager account, sent as login-customer-id
	// when set, if access goes through one.
	LoginCustomerID string `yaml:"login_customer_id"`
	// TokenURL is the OAuth2 token endpoint. Default DefaultTokenURL.
	TokenURL string `yaml:"token_url"`
	// ClientID, ClientSecret and RefreshToken are the OAuth2 credentials
	// (the refresh token of a user with access to CustomerID). Required.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	RefreshToken string `yaml:"refresh_token"`
	// DeveloperToken is sent as developer-token when set.
	DeveloperToken string `yaml:"developer_token"`
	// RequestsPerSecond is the process-wide pace of requests. Default
	// DefaultRequestsPerSecond.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// USDRate is the value in USD of one unit of the account's currency
	// (1.08 for EUR), used when the account does not bill in USD. Default
	// 0, which refuses such an account: every amount would be off by the
	// rate.
	USDRate float64 `yaml:"usd_rate"`
	// ExpandIdeas is the most new keywords a run adds to each country's
	// keyword list with ExpandUniverse, seeded with that list, before it
	// fetches metrics. Default 0: no expansion. The client itself does not
	// read it; it travels with the Google Ads settings.
	ExpandIdeas int `yaml:"expand_ideas"`
}

// WithDefaults returns c with the default of every unset field filled in
// (a zero or negative pace is unset). New calls it; a configuration loader
// calls it too, so that it checks and shows the values a client will use.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.APIVersion == "" {
		c.APIVersion = DefaultAPIVersion
	}
	if c.TokenURL == "" {
		c.TokenURL = DefaultTokenURL
	}
	if c.RequestsPerSecond <= 0 {
		c.RequestsPerSecond = DefaultRequestsPerSecond
	}
	return c
}

// Options tunes the client. The zero value is ready to use; withDefaults
// fills every field in one place.
type Options struct {
	// HTTPClient sends API and token requests. Default: a client with a
	// 2-minute timeout.
	HTTPClient *http.Client
	// Logger receives retries, quota waits and skipped keywords. Default:
	// a logger that discards.
	Logger *slog.Logger
	// Now is the clock used for pacing. Default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends. Default: a timer. Tests record the
	// delays instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// CheckpointDir holds one file per finished batch (batch-00017.json)
	// and the keyword list ExpandUniverse produced (universe.json), e.g.
	// <data>/state/googleads/<cc>/<date>. Default "": no checkpoint.
	CheckpointDir string
	// BatchSize is the number of keywords a request; default and maximum
	// MaxKeywordsPerRequest.
	BatchSize int
	// IdeasPageSize is pageSize of GenerateKeywordIdeas; default 1,000.
	IdeasPageSize int
	// MaxAttempts bounds the attempts of one request across retries of
	// 5xx, network errors and short quota waits. Default 6.
	MaxAttempts int
	// BaseBackoff is the first exponential backoff delay; it doubles each
	// retry. Default 1s.
	BaseBackoff time.Duration
	// MaxBackoff caps the exponential backoff. Default 1 minute.
	MaxBackoff time.Duration
	// MaxRetryDelay is the longest quota delay the client waits out; a
	// longer one (the daily bucket) stops the run with a
	// *QuotaExhaustedError. Default 10 minutes.
	MaxRetryDelay time.Duration
	// Progress, when set, is called after each finished batch of
	// HistoricalMetrics with the batches done and the total.
	Progress func(done, total int)
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
	}
	if o.BatchSize <= 0 || o.BatchSize > MaxKeywordsPerRequest {
		o.BatchSize = MaxKeywordsPerRequest
	}
	if o.IdeasPageSize <= 0 || o.IdeasPageSize > 10_000 {
		o.IdeasPageSize = 1000
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.MaxRetryDelay <= 0 {
		o.MaxRetryDelay = 10 * time.Minute
	}
	return o
}

// Client calls the keyword planning service of one Google Ads account. It
// is safe for concurrent use; requests of every Client of the process that
// share endpoint, account and developer token are paced together.
type Client struct {
	cfg    Config
	opt    Options
	log    *slog.Logger
	tokens oauth2.TokenSource
	pace   *pacer

	mu       sync.Mutex
	currency *accountCurrency // nil until the first request that returns money
}

// New checks cfg and returns a client. It does not contact the service; the
// first request mints the first access token.
func New(cfg Config, opt Options) (*Client, error) {
	opt = opt.withDefaults()
	cfg = cfg.WithDefaults()
	cfg.Endpoint = strings.TrimRight(cfg.Endpoint, "/")
	cfg.CustomerID = strings.ReplaceAll(strings.TrimSpace(cfg.CustomerID), "-", "")
	cfg.LoginCustomerID = strings.ReplaceAll(strings.TrimSpace(cfg.LoginCustomerID), "-", "")
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"customer_id", cfg.CustomerID}, {"client_id", cfg.ClientID},
		{"client_secret", cfg.ClientSecret}, {"refresh_token", cfg.RefreshToken},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("googleads config lacks %s; set them in the googleads section of the config file", strings.Join(missing, ", "))
	}
	if math.IsNaN(cfg.USDRate) || math.IsInf(cfg.USDRate, 0) || cfg.USDRate < 0 {
		return nil, fmt.Errorf("googleads usd_rate is %v; write the USD value of one unit of the account's currency, e.g. 1.08 for EUR", cfg.USDRate)
	}
	for _, r := range cfg.CustomerID + cfg.LoginCustomerID {
		if r < '0' || r > '9' {
			return nil, fmt.Errorf("googleads customer ids must be digits (dashes allowed), got %q / %q", cfg.CustomerID, cfg.LoginCustomerID)
		}
	}
	oc := &oauth2.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: cfg.TokenURL, AuthStyle: oauth2.AuthStyleInParams},
		Scopes:       []string{"https://www.googleapis.com/auth/adwords"},
	}
	// The token source outlives any one call, so it gets a background
	// context that only carries the HTTP client; ReuseTokenSource inside
	// caches the access token until shortly before it expires.
	tctx := context.WithValue(context.Background(), oauth2.HTTPClient, opt.HTTPClient)
	c := &Client{
		cfg:    cfg,
		opt:    opt,
		log:    opt.Logger.With("source", Source, "customer", cfg.CustomerID),
		tokens: oc.TokenSource(tctx, &oauth2.Token{RefreshToken: cfg.RefreshToken}),
		pace:   sharedPacer(cfg.Endpoint+"|"+cfg.CustomerID+"|"+cfg.DeveloperToken, cfg.RequestsPerSecond),
	}
	return c, nil
}

// APIError is an error answer of the service, with the service's message.
type APIError struct {
	HTTPStatus    int
	Status        string   // google.rpc.Code name, e.g. "RESOURCE_EXHAUSTED"
	Message       string   // error.message
	Details       []string // GoogleAdsError messages
	Codes         []string // "quotaError=RESOURCE_EXHAUSTED", ...
	RequestID     string
	RateName      string // quota bucket, e.g. "Number of operations for basic access"
	Quota         bool   // a RESOURCE_EXHAUSTED quota error
	RetryDelay    time.Duration
	HasRetryDelay bool
}

// Error quotes the service's status, message and error codes.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "google ads api answered HTTP %d", e.HTTPStatus)
	if e.Status != "" {
		b.WriteString(" " + e.Status)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for _, d := range e.Details {
		if d != e.Message {
			b.WriteString("; " + d)
		}
	}
	if len(e.Codes) > 0 {
		b.WriteString(" (" + strings.Join(e.Codes, ", ") + ")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// ErrQuotaExhausted matches (errors.Is) every *QuotaExhaustedError.
var ErrQuotaExhausted = errors.New("google ads quota exhausted")

// QuotaExhaustedError stops a run whose quota will not come back soon: the
// service asked for a delay longer than Options.MaxRetryDelay, or quota
// errors outlasted Options.MaxAttempts. Finished batches are in the
// checkpoint; run again after RetryAfter to continue.
type QuotaExhaustedError struct {
	RetryAfter   time.Duration // the service's delay; 0 if it named none
	BatchesDone  int           // batches finished, including earlier runs
	BatchesTotal int
	Err          *APIError
}

// Error says how long the service asked to wait and how far the run got.
func (e *QuotaExhaustedError) Error() string {
	msg := "google ads quota exhausted"
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf("; the service asks to wait %s", e.RetryAfter)
	}
	if e.BatchesTotal > 0 {
		msg += fmt.Sprintf("; %d of %d batches are checkpointed, run again later to continue", e.BatchesDone, e.BatchesTotal)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrQuotaExhausted) true.
func (e *QuotaExhaustedError) Is(target error) bool { return target == ErrQuotaExhausted }

// Unwrap returns the service's error.
func (e *QuotaExhaustedError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// call POSTs body to customers/{id}{rpc}, where rpc is ":method" for the
// keyword planning methods and "/googleAds:search" for the reporting query,
// and returns the 2xx body, pacing every attempt and retrying what the
// service says is transient.
func (c *Client) call(ctx context.Context, rpc string, body []byte) ([]byte, error) {
	url := fmt.Sprintf("%s/%s/customers/%s%s", c.cfg.Endpoint, c.cfg.APIVersion, c.cfg.CustomerID, rpc)
	method := strings.TrimLeft(rpc, ":/")
	backoffs := 0
	var lastErr error
	var lastQuota *APIError // set while the latest failure is a quota error
	for attempt := 1; ; attempt++ {
		if err := c.waitTurn(ctx); err != nil {
			return nil, err
		}
		status, resp, err := c.send(ctx, url, body)
		var delay time.Duration
		lastQuota = nil
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
				return nil, fmt.Errorf("cannot refresh the google ads access token (check client_id, client_secret and refresh_token): %w", err)
			}
			delay, backoffs = retry.Backoff(c.opt.BaseBackoff, c.opt.MaxBackoff, backoffs), backoffs+1
			lastErr = err
		case status/100 == 2:
			return resp, nil
		default:
			apiErr := decodeError(status, resp)
			lastErr = apiErr
			switch {
			case apiErr.Quota || status == http.StatusTooManyRequests:
				lastQuota = apiErr
				if apiErr.HasRetryDelay {
					delay = apiErr.RetryDelay
				} else {
					delay, backoffs = retry.Backoff(c.opt.BaseBackoff, c.opt.MaxBackoff, backoffs), backoffs+1
				}
				if delay > c.opt.MaxRetryDelay {
					return nil, &QuotaExhaustedError{RetryAfter: delay, Err: apiErr}
				}
			case status >= 500 || status == http.StatusRequestTimeout:
				delay, backoffs = retry.Backoff(c.opt.BaseBackoff, c.opt.MaxBackoff, backoffs), backoffs+1
			default:
				return nil, apiErr
			}
		}
		if attempt >= c.opt.MaxAttempts {
			if lastQuota != nil {
				return nil, &QuotaExhaustedError{Err: lastQuota}
			}
			return nil, fmt.Errorf("cannot call %s after %d attempts: %w", method, attempt, lastErr)
		}
		c.log.Warn("retrying google ads request", "method", method, "attempt", attempt, "delay", delay, "err", lastErr)
		if err := c.opt.Sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

func (c *Client) waitTurn(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := c.pace.reserve(c.opt.Now()); d > 0 {
		return c.opt.Sleep(ctx, d)
	}
	return nil
}

func (c *Client) send(ctx context.Context, url string, body []byte) (int, []byte, error) {
	tok, err := c.tokens.Token()
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("cannot build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	if c.cfg.DeveloperToken != "" {
		req.Header.Set("developer-token", c.cfg.DeveloperToken)
	}
	if c.cfg.LoginCustomerID != "" {
		req.Header.Set("login-customer-id", c.cfg.LoginCustomerID)
	}
	resp, err := c.opt.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	// 64 MiB holds a 10,000-keyword answer with four years of months.
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read response: %w", err)
	}
	return resp.StatusCode, b, nil
}
