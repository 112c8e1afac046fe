package dataforseo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kwdata/kwdata/ingest/internal/retry"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// Defaults of Config and Options.
const (
	DefaultEndpoint       = "https://api.dataforseo.com"
	DefaultMaxSERPsPerRun = 10000
	// Depth is the number of results asked for: the top 20, which the
	// service crawls as two result pages of 10.
	Depth = 20
	// MaxTasksPerPost is the documented limit of tasks in one task_post.
	MaxTasksPerPost = 100
)

// The tasks_ready list: at most readyPageSize tasks an answer, and the
// tasks behind a full page are listed only once those are collected; at
// most 20 calls a minute (DataForSEO help center, "How do I know when a
// task is completed?").
const (
	readyPageSize = 1000
	readyMinGap   = time.Minute / 20
)

// Source paths of the Google organic standard queue.
const (
	pathTaskPost   = "/v3/serp/google/organic/task_post"
	pathTasksReady = "/v3/serp/google/organic/tasks_ready"
	pathTaskGet    = "/v3/serp/google/organic/task_get/advanced/"
)

// Config holds the account and the refresh budget. The dataforseo section
// of kwdata's configuration file decodes straight into it (the yaml tags
// are its keys); WithDefaults fills the default named on each field.
type Config struct {
	// Endpoint is the API root. Default DefaultEndpoint; tests point it
	// at a fake.
	Endpoint string `yaml:"endpoint"`
	// Login and Password are the HTTP Basic credentials
	// (https://app.dataforseo.com/api-access). Required.
	Login    string `yaml:"login"`
	Password string `yaml:"password"`
	// MaxSERPsPerRun caps the SERPs one FetchSERPs call pays for; in a
	// configuration file, the SERPs one run pays for, shared by all its
	// countries, oldest first. Default DefaultMaxSERPsPerRun.
	MaxSERPsPerRun int `yaml:"max_serps_per_run"`
	// MaxAgeDays is how old a keyword's newest SERP may be for the
	// similarity stage to use it, and so how long retention keeps SERP
	// partitions. Default kw.DefaultSERPMaxAgeDays. The client itself
	// does not read it; it travels with the DataForSEO settings.
	MaxAgeDays int `yaml:"max_age_days"`
}

// WithDefaults returns c with the default of every unset field filled in
// (zero or negative numbers are unset). New calls it; a configuration
// loader calls it too, so that it checks and shows the values a client
// will use.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.MaxSERPsPerRun <= 0 {
		c.MaxSERPsPerRun = DefaultMaxSERPsPerRun
	}
	if c.MaxAgeDays <= 0 {
		c.MaxAgeDays = kw.DefaultSERPMaxAgeDays
	}
	return c
}

// Options tunes the client. The zero value is ready to use; withDefaults
// fills every field in one place.
type Options struct {
	// HTTPClient sends the requests. Default: a client with a 2-minute
	// timeout.
	HTTPClient *http.Client
	// Logger receives retries, failed tasks and skipped results. Default:
	// a logger that discards.
	Logger *slog.Logger
	// Now is the clock of the polling deadline. Default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// CheckpointDir holds posted.jsonl and collected.jsonl, e.g.
	// <data>/state/dataforseo/<cc>/<date>. Default "": no checkpoint, and
	// an interrupted run pays again for its tasks.
	CheckpointDir string
	// PollInterval is the wait between tasks_ready polls. Default 20s.
	// After a full page of the list (1,000 tasks) with tasks of the run on
	// it, the next poll waits only for the rate limit of tasks_ready.
	PollInterval time.Duration
	// MaxWait bounds the time spent waiting for posted tasks; tasks not
	// ready by then are left for the next run. Default 30 minutes.
	MaxWait time.Duration
	// Workers is the number of task_get requests in flight. Default 4.
	Workers int
	// MaxAttempts bounds the attempts of one request across retries of
	// 5xx, network errors and rate limiting. Default 5.
	MaxAttempts int
	// BaseBackoff is the first retry delay; it doubles each retry.
	// Default 2s.
	BaseBackoff time.Duration
	// MaxBackoff caps the retry delay. Default 1 minute.
	MaxBackoff time.Duration
	// Progress, when set, is called as FetchSERPs collects SERPs: done of
	// the total it wants this run (those collected by an interrupted
	// earlier run of the date count as done). Default: none.
	Progress func(done, total int)
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 20 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 30 * time.Minute
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 2 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	return o
}

// Client fetches SERPs from one DataForSEO account. One FetchSERPs call at
// a time may use a given CheckpointDir.
type Client struct {
	cfg Config
	opt Options
	log *slog.Logger
}

// New checks cfg and returns a client; it does not contact the service.
func New(cfg Config, opt Options) (*Client, error) {
	cfg = cfg.WithDefaults()
	cfg.Endpoint = strings.TrimRight(cfg.Endpoint, "/")
	if cfg.Login == "" || cfg.Password == "" {
		return nil, errors.New("dataforseo config lacks login or password; set both in the dataforseo section of the config file (see https://app.dataforseo.com/api-access)")
	}
	opt = opt.withDefaults()
	return &Client{cfg: cfg, opt: opt, log: opt.Logger.With("source", "dataforseo")}, nil
}

// Config returns the configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// FetchStats reports one FetchSERPs call.
type FetchStats struct {
	Requested       int     // distinct valid keywords asked for, after the budget
	InvalidKeywords int     // keywords that do not normalize
	OverBudget      int     // keywords left out by MaxSERPsPerRun
	Posted          int     // tasks created and paid for by this call
	Resumed         int     // keywords whose paid task came from the checkpoint
	Collected       int     // keywords with a SERP in the result
	Failed          int     // keywords whose task failed; see Failures
	Pending         int     // tasks not ready within MaxWait; a re-run collects them
	SkippedURLs     int     // organic results dropped because kw.URLKey refused the URL
	Cost            float64 // USD the service reported for this call's task_post requests
	Failures        []TaskFailure
}

// TaskFailure is one keyword whose task the service refused or failed.
type TaskFailure struct {
	Keyword string
	Code    int // the task's status_code, e.g. 40501
	Message string
}

// APIError is a request the service refused as a whole.
type APIError struct {
	HTTPStatus int
	Code       int // envelope status_code
	Message    string
}

// Error quotes the envelope's status code and message.
func (e *APIError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("dataforseo answered %d: %s (HTTP %d)", e.Code, e.Message, e.HTTPStatus)
	}
	return fmt.Sprintf("dataforseo answered HTTP %d: %s", e.HTTPStatus, e.Message)
}

// ErrTasksPending is wrapped by the error of a FetchSERPs call that ran out
// of MaxWait with tasks still in the queue. The SERPs it returns are valid;
// a re-run with the same CheckpointDir collects the rest without paying
// again.
var ErrTasksPending = errors.New("dataforseo tasks still pending")

// FetchSERPs returns the top-20 organic results of keywords in country,
// keyed by normalized keyword. It posts one task per keyword not yet in the
// checkpoint (at most 100 a POST), polls tasks_ready every PollInterval (at
// once after a full page) for at most MaxWait, and collects each ready task
// with task_get/advanced. A
// task that fails is counted in the stats, never fatal; a request the
// service refuses as a whole (credentials, balance) is.
func (c *Client) FetchSERPs(ctx context.Context, country kw.Country, keywords []string) (map[string][]kw.SERPRow, FetchStats, error) {
	var stats FetchStats
	wanted := make([]string, 0, len(keywords))
	seen := map[string]bool{}
	for _, k := range keywords {
		n, err := kw.NormalizeKeyword(k)
		if err != nil {
			stats.InvalidKeywords++
			continue
		}
		if !seen[n] {
			seen[n] = true
			wanted = append(wanted, n)
		}
	}
	if len(wanted) > c.cfg.MaxSERPsPerRun {
		stats.OverBudget = len(wanted) - c.cfg.MaxSERPsPerRun
		wanted = wanted[:c.cfg.MaxSERPsPerRun]
		c.log.Warn("keywords over the SERP budget left for a later run", "country", country.Code, "count", stats.OverBudget)
	}
	stats.Requested = len(wanted)

	st, err := loadState(c.opt.CheckpointDir, country.Code)
	if err != nil {
		return nil, stats, err
	}
	run := &fetchRun{c: c, country: country, st: st, stats: &stats, wanted: map[string]bool{}, pending: map[string]string{}}
	for _, k := range wanted {
		run.wanted[k] = true
		if _, ok := st.collected[k]; ok {
			run.done++
		}
	}
	c.opt.Progress(run.done, len(wanted))
	for _, k := range wanted {
		if _, done := st.collected[k]; !done && st.posted[k] != "" {
			run.pending[st.posted[k]] = k
		}
	}
	if c.opt.CheckpointDir != "" {
		// Perhaps a resumed run. Tasks paid for earlier may already have
		// been taken off the ready list, so ask for them by id; then
		// adopt ready tasks of ours whose ids were lost, by their tag.
		// Both are free; posting again is not.
		if err := run.collect(ctx, keysOf(run.pending)); err != nil {
			return nil, stats, err
		}
		if _, err := run.pollOnce(ctx); err != nil {
			return nil, stats, err
		}
	}
	inFlight := make(map[string]bool, len(run.pending))
	for _, k := range run.pending {
		inFlight[k] = true
	}
	var toPost []string
	for _, k := range wanted {
		if _, done := st.collected[k]; done || inFlight[k] {
			stats.Resumed++
			continue
		}
		toPost = append(toPost, k)
	}
	for i := 0; i < len(toPost); i += MaxTasksPerPost {
		if err := run.post(ctx, toPost[i:min(i+MaxTasksPerPost, len(toPost))]); err != nil {
			return nil, stats, err
		}
	}
	waitErr := run.wait(ctx)
	if waitErr != nil && !errors.Is(waitErr, ErrTasksPending) {
		return nil, stats, waitErr
	}

	out := make(map[string][]kw.SERPRow)
	for _, k := range wanted {
		l, ok := st.collected[k]
		switch {
		case !ok:
		case l.Code != 0:
			stats.Failed++
			stats.Failures = append(stats.Failures, TaskFailure{Keyword: k, Code: l.Code, Message: l.Message})
		default:
			out[k] = l.Rows
			stats.Collected++
		}
	}
	stats.Failed += len(run.postFailures)
	stats.Failures = append(stats.Failures, run.postFailures...)
	sort.Slice(stats.Failures, func(i, j int) bool { return stats.Failures[i].Keyword < stats.Failures[j].Keyword })
	stats.Pending = len(run.pending)
	c.opt.Progress(len(wanted)-stats.Pending, len(wanted)) // failed tasks are done too
	return out, stats, waitErr
}

// fetchRun is the state of one FetchSERPs call.
type fetchRun struct {
	c            *Client
	country      kw.Country
	st           *state
	stats        *FetchStats
	wanted       map[string]bool
	pending      map[string]string // task id -> keyword, posted and not collected
	postFailures []TaskFailure
	done         int // wanted keywords collected, for Options.Progress
}

func (r *fetchRun) tagPrefix() string { return "kwdata/" + strings.ToLower(r.country.Code) + "/" }

func (r *fetchRun) post(ctx context.Context, batch []string) error {
	tasks := make([]taskPost, len(batch))
	for i, k := range batch {
		tasks[i] = taskPost{Keyword: k, LocationCode: r.country.GeoTarget, LanguageCode: r.country.LanguageCode,
			Depth: Depth, Tag: r.tagPrefix() + k}
	}
	body, err := json.Marshal(tasks)
	if err != nil {
		return fmt.Errorf("cannot encode tasks: %w", err)
	}
	env, err := doEnvelope(ctx, r.c, http.MethodPost, pathTaskPost, body, decodeTaskPost)
	if err != nil {
		return fmt.Errorf("cannot post %d SERP tasks for %s: %w", len(batch), r.country.Code, err)
	}
	r.stats.Cost += env.Cost
	byTag := make(map[string]string, len(batch))
	for _, k := range batch {
		byTag[r.tagPrefix()+k] = k
	}
	answered := map[string]bool{}
	for i, t := range env.Tasks {
		// Tasks come back in the order they were sent; the echoed tag
		// confirms it.
		k, ok := byTag[t.Data.Tag]
		if !ok && i < len(batch) {
			k = batch[i]
		}
		if k == "" || answered[k] {
			continue
		}
		answered[k] = true
		if t.StatusCode != codeTaskCreated || t.ID == "" {
			r.c.log.Warn("SERP task refused", "country", r.country.Code, "keyword", k, "code", t.StatusCode, "message", t.StatusMessage)
			r.postFailures = append(r.postFailures, TaskFailure{Keyword: k, Code: t.StatusCode, Message: t.StatusMessage})
			continue
		}
		if err := r.st.addPosted(k, t.ID); err != nil {
			return err
		}
		r.pending[t.ID] = k
		r.stats.Posted++
	}
	for _, k := range batch {
		if !answered[k] {
			r.postFailures = append(r.postFailures, TaskFailure{Keyword: k, Message: "task_post answered without this task"})
		}
	}
	return nil
}

// wait polls tasks_ready until nothing is pending or MaxWait passes. After
// a full page with tasks of ours on it the next poll goes out as soon as
// the rate limit of tasks_ready allows, not after PollInterval: the tasks
// behind that page are likely ready already, and 10,000 SERPs are ten
// pages.
func (r *fetchRun) wait(ctx context.Context) error {
	deadline := r.c.opt.Now().Add(r.c.opt.MaxWait)
	warned := false
	for len(r.pending) > 0 {
		start := r.c.opt.Now()
		page, err := r.pollOnce(ctx)
		if err != nil {
			return err
		}
		if len(r.pending) == 0 {
			return nil
		}
		pause := r.c.opt.PollInterval
		switch {
		case page.listed >= readyPageSize && page.ours > 0:
			pause = min(pause, readyMinGap-r.c.opt.Now().Sub(start))
		case page.listed >= readyPageSize && !warned:
			// Polling again at once would list the same page; ours wait
			// behind it until MaxWait, then are asked for by id.
			warned = true
			r.c.log.Warn("tasks_ready lists a full page of tasks that are not this run's; they hide this run's tasks until someone collects them",
				"country", r.country.Code, "listed", page.listed, "pending", len(r.pending))
		}
		if !r.c.opt.Now().Before(deadline) {
			// One last look by id: the ready list lags behind and is capped.
			if err := r.collect(ctx, keysOf(r.pending)); err != nil {
				return err
			}
			if len(r.pending) == 0 {
				return nil
			}
			r.c.log.Warn("SERP tasks not ready in time; a re-run collects them", "country", r.country.Code, "pending", len(r.pending))
			return fmt.Errorf("%w: %d tasks for %s not ready after %s", ErrTasksPending, len(r.pending), r.country.Code, r.c.opt.MaxWait)
		}
		if pause <= 0 {
			continue
		}
		if err := r.c.opt.Sleep(ctx, pause); err != nil {
			return err
		}
	}
	return nil
}

// readyPage is what one tasks_ready answer held.
type readyPage struct {
	listed int // tasks listed, ours or not
	ours   int // of them, tasks of this run, collected or found still running
}

// pollOnce reads tasks_ready and collects the ready tasks that are ours.
func (r *fetchRun) pollOnce(ctx context.Context) (readyPage, error) {
	var page readyPage
	env, err := doEnvelope(ctx, r.c, http.MethodGet, pathTasksReady, nil, decodeTasksReady)
	if err != nil {
		return page, fmt.Errorf("cannot poll ready SERP tasks: %w", err)
	}
	var ids []string
	for _, t := range env.Tasks {
		page.listed += len(t.Result)
		for _, rt := range t.Result {
			if _, ok := r.pending[rt.ID]; ok {
				ids = append(ids, rt.ID)
				continue
			}
			// A task of ours whose id was lost (a crash between the
			// service's answer and the checkpoint): adopt it by its tag.
			if k, ok := strings.CutPrefix(rt.Tag, r.tagPrefix()); ok && rt.ID != "" && r.wanted[k] {
				if _, done := r.st.collected[k]; !done {
					r.pending[rt.ID] = k
					ids = append(ids, rt.ID)
				}
			}
		}
	}
	page.ours = len(ids)
	return page, r.collect(ctx, ids)
}

// outcome is what task_get said about one task.
type outcome struct {
	id    string
	ready bool
	line  collectedLine
	err   error
}

// collect fetches tasks by id with Workers requests in flight and records
// every final outcome; tasks still queued stay pending.
func (r *fetchRun) collect(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan string)
	results := make(chan outcome)
	var wg sync.WaitGroup
	for range min(r.c.opt.Workers, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				o := r.c.getTask(ctx, id)
				select {
				case results <- o:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, id := range ids {
			select {
			case jobs <- id:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var firstErr error
	for o := range results {
		if firstErr != nil {
			continue
		}
		if o.err != nil {
			firstErr = o.err
			cancel()
			continue
		}
		if !o.ready {
			continue
		}
		k, ok := r.pending[o.id]
		if !ok {
			continue
		}
		o.line.Keyword = k
		for i := range o.line.Rows {
			o.line.Rows[i].Keyword = k
		}
		if o.line.Code != 0 {
			r.c.log.Warn("SERP task failed", "country", r.country.Code, "keyword", k, "code", o.line.Code, "message", o.line.Message)
		}
		r.stats.SkippedURLs += o.line.SkippedURLs
		if err := r.st.addCollected(o.line); err != nil {
			firstErr = err
			cancel()
			continue
		}
		delete(r.pending, o.id)
		if r.wanted[k] {
			r.done++
			r.c.opt.Progress(r.done, len(r.wanted))
		}
	}
	return firstErr
}

// getTask asks task_get/advanced for one task. In-queue answers are not
// ready; any other task-level error is the task's final failure.
func (c *Client) getTask(ctx context.Context, id string) outcome {
	env, err := doEnvelope(ctx, c, http.MethodGet, pathTaskGet+url.PathEscape(id), nil, decodeTaskGet)
	if err != nil {
		return outcome{id: id, err: fmt.Errorf("cannot get SERP task %s: %w", id, err)}
	}
	if len(env.Tasks) == 0 {
		return outcome{id: id, err: fmt.Errorf("task_get for %s answered without a task", id)}
	}
	t := env.Tasks[0]
	switch t.StatusCode {
	case codeOK:
		rows, skipped := organicRows(t.Result)
		return outcome{id: id, ready: true, line: collectedLine{ID: id, Rows: rows, SkippedURLs: skipped}}
	case codeTaskInQueue, codeTaskHanded:
		return outcome{id: id}
	default:
		code := t.StatusCode
		if code == 0 {
			code = -1 // a task without a status is a failure all the same
		}
		return outcome{id: id, ready: true, line: collectedLine{ID: id, Code: code, Message: t.StatusMessage}}
	}
}

// organicRows keeps the organic items, ordered by rank_group (then
// rank_absolute), applies the top-20 rule of kw.MaxRank with rank_group as
// the rank (items ranked past kw.MaxRank dropped, then at most kw.MaxRank
// kept), drops those whose URL kw.URLKey refuses, and numbers the rest
// 1..n. Keyword is filled in by the caller.
func organicRows(results []serpResult) ([]kw.SERPRow, int) {
	var items []serpItem
	for _, res := range results {
		for _, it := range res.Items {
			// A rank_group outside int32 must not wrap into the top.
			if rank := int32(it.RankGroup); it.Type == "organic" && int(rank) == it.RankGroup && kw.InTop(rank) {
				items = append(items, it)
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].RankGroup != items[j].RankGroup {
			return items[i].RankGroup < items[j].RankGroup
		}
		return items[i].RankAbsolute < items[j].RankAbsolute
	})
	if len(items) > kw.MaxRank {
		items = items[:kw.MaxRank]
	}
	var rows []kw.SERPRow
	skipped := 0
	for _, it := range items {
		key, err := kw.URLKey(it.URL)
		if err != nil {
			skipped++
			continue
		}
		rows = append(rows, kw.SERPRow{Rank: int32(len(rows) + 1), URL: it.URL, URLKey: key})
	}
	return rows, skipped
}

// doEnvelope sends one request and decodes its envelope, retrying network
// errors, HTTP 5xx, status 50000 and rate limiting (HTTP 429 whatever its
// body, or status 40202) with exponential backoff. A POST is retried only
// when the answer shows no task was created, so a retry never pays twice.
func doEnvelope[T any](ctx context.Context, c *Client, method, path string, body []byte, decode func([]byte) (envelope[T], error)) (envelope[T], error) {
	var zero envelope[T]
	var lastErr error
	for attempt := 1; ; attempt++ {
		status, resp, err := c.send(ctx, method, path, body)
		again := false
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return zero, ctx.Err()
			}
			// Without an answer a POST may have created tasks; the tag
			// lets the next run adopt them rather than paying again.
			lastErr, again = err, method == http.MethodGet
		default:
			env, decErr := decode(resp)
			switch {
			case status == http.StatusUnauthorized || status == http.StatusPaymentRequired || status == http.StatusNotFound:
				msg := retry.Snippet(resp)
				if decErr == nil && env.StatusMessage != "" {
					msg = env.StatusMessage
				}
				return zero, &APIError{HTTPStatus: status, Code: env.StatusCode, Message: msg}
			case decErr != nil:
				// A proxy in front of the service answers overload and rate
				// limits with its own HTML page: transient all the same.
				transient := status >= 500 || status == http.StatusTooManyRequests
				lastErr = decErr
				if transient {
					lastErr = &APIError{HTTPStatus: status, Message: retry.Snippet(resp)}
				}
				again = transient && (method == http.MethodGet || !strings.Contains(string(resp), `"status_code":20100`))
			case env.StatusCode == codeOK:
				return env, nil
			case env.StatusCode == codeInternal || env.StatusCode == codeRateLimit || status >= 500 || status == http.StatusTooManyRequests:
				lastErr = &APIError{HTTPStatus: status, Code: env.StatusCode, Message: env.StatusMessage}
				again = method == http.MethodGet || !anyCreated(env)
			default:
				return zero, &APIError{HTTPStatus: status, Code: env.StatusCode, Message: env.StatusMessage}
			}
		}
		if !again {
			return zero, lastErr
		}
		if attempt >= c.opt.MaxAttempts {
			return zero, fmt.Errorf("giving up after %d attempts: %w", attempt, lastErr)
		}
		delay := retry.Backoff(c.opt.BaseBackoff, c.opt.MaxBackoff, attempt-1)
		c.log.Warn("retrying dataforseo request", "path", path, "attempt", attempt, "delay", delay, "err", lastErr)
		if err := c.opt.Sleep(ctx, delay); err != nil {
			return zero, err
		}
	}
}

func anyCreated[T any](env envelope[T]) bool {
	for _, t := range env.Tasks {
		if t.StatusCode == codeTaskCreated {
			return true
		}
	}
	return false
}

func (c *Client) send(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.Endpoint+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot build request: %w", err)
	}
	req.SetBasicAuth(c.cfg.Login, c.cfg.Password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.opt.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read response: %w", err)
	}
	return resp.StatusCode, b, nil
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
