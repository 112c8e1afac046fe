// Package objstore distributes index builds through an S3-compatible
// object store (AWS S3, MinIO, Ceph, R2, Versity Gateway): Publish uploads
// a finished local build, and a Syncer on each server downloads a newly
// published one into the server's own data folder, verifies it and points
// the local CURRENT at it, so that the index store switches as it does
// after a local build.
//
// Layout under s3://BUCKET/PREFIX/:
//
//	CURRENT                  the id of the published build, one line
//	builds/<id>/files.json   every file of the build: name, size, SHA-256
//	builds/<id>/<file>       the build's files, as under <data>/index/<id>/
//
// Publish uploads the files, then files.json, then replaces CURRENT last:
// a reader that follows CURRENT never meets half a build.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Object names under the prefix.
const (
	pointerObject = "CURRENT"
	buildsDir     = "builds"
	filesObject   = "files.json"
)

// Location is where builds are published: a bucket and a key prefix
// without leading or trailing slashes ("" for the bucket's root).
type Location struct {
	Bucket string
	Prefix string
}

// String returns the location as an s3:// URL.
func (l Location) String() string {
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// IsURL reports whether s names an object store location (s3://…) rather
// than a local folder.
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseURL parses s3://BUCKET/PREFIX. The prefix may be empty or hold
// several segments; it must not hold empty, "." or ".." segments.
func ParseURL(s string) (Location, error) {
	if !IsURL(s) {
		return Location{}, fmt.Errorf("%q is not an object store location; write s3://BUCKET/PREFIX", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Location{}, fmt.Errorf("cannot parse %q; write s3://BUCKET/PREFIX: %w", s, err)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return Location{}, fmt.Errorf("%q is not s3://BUCKET/PREFIX (a bucket name, then an optional key prefix)", s)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return Location{}, fmt.Errorf("prefix of %q has an empty, . or .. segment", s)
			}
		}
	}
	return Location{Bucket: u.Host, Prefix: prefix}, nil
}

// key returns the object key of name (slash-separated) under the prefix.
func (l Location) key(name ...string) string {
	if l.Prefix == "" {
		return path.Join(name...)
	}
	return l.Prefix + "/" + path.Join(name...)
}

// Options configures a Client.
type Options struct {
	// Endpoint is the store's URL ("http://127.0.0.1:7070") for stores
	// other than AWS S3; requests then use path-style addressing
	// (endpoint/bucket/key), which every S3-compatible store accepts.
	// Default (empty): AWS S3, with the region's virtual-host endpoint.
	Endpoint string
	// Workers is how many files move at once. Default: 4.
	Workers int
	// MaxAttempts is how often the SDK tries one request (transient
	// errors, throttling) before the caller sees its error. Default:
	// the SDK's, 3. Publish fails and the syncer backs off after that.
	MaxAttempts int
	// Timeout bounds the silence of every request to the store: one that
	// moves no byte for this long (connecting, waiting for the answer, or
	// in the middle of a body) fails with its operation, without more
	// attempts. A large file may take longer as long as it keeps moving.
	// Default: 20s.
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout's default: short enough that a sync
// from a store that stopped answering fails, and says so, within 30
// seconds.
const DefaultTimeout = 20 * time.Second

// Client publishes builds to, and fetches them from, one location.
type Client struct {
	s3       *s3.Client
	loc      Location
	endpoint string // "" for AWS S3
	creds    aws.CredentialsProvider
	workers  int
	timeout  time.Duration
}

// New returns a client of loc with the credentials and region of cfg
// (the caller loads cfg through the standard AWS chain:
// config.LoadDefaultConfig). A config without a region gets us-east-1,
// which S3-compatible stores ignore or expect.
func New(cfg aws.Config, loc Location, opt Options) (*Client, error) {
	if loc.Bucket == "" {
		return nil, errors.New("cannot reach the object store: no bucket given")
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if opt.Endpoint != "" {
		u, err := url.Parse(opt.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("endpoint %q is not an http:// or https:// URL", opt.Endpoint)
		}
	}
	// Checksums are the build's own (SHA-256 in files.json, checked after
	// every download); the SDK's default request checksums are left to
	// the operations that need them, since several S3-compatible stores
	// reject the trailing checksum headers.
	cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opt.MaxAttempts > 0 {
			o.RetryMaxAttempts = opt.MaxAttempts
		}
		if opt.Endpoint != "" {
			o.BaseEndpoint = aws.String(opt.Endpoint)
			o.UsePathStyle = true
		}
	})
	return &Client{s3: c, loc: loc, endpoint: opt.Endpoint, creds: cfg.Credentials, workers: opt.Workers, timeout: opt.Timeout}, nil
}

// Location returns where the client publishes.
func (c *Client) Location() Location { return c.loc }

// CreateBucket creates the client's bucket if it does not exist yet
// (setting up a store, and tests). Publishing needs an existing bucket.
func (c *Client) CreateBucket(ctx context.Context) error {
	if err := c.headBucket(ctx); err == nil {
		return nil
	}
	req := c.start(ctx)
	defer req.end()
	_, err := c.s3.CreateBucket(req.ctx, &s3.CreateBucketInput{Bucket: aws.String(c.loc.Bucket)})
	if err = req.err(err); err != nil {
		return fmt.Errorf("cannot create bucket %s: %w", c.loc.Bucket, err)
	}
	return nil
}

// Errors of Check, for the caller to say what to fix.
var (
	// ErrNoCredentials: no credentials were found (none configured, or
	// their provider failed).
	ErrNoCredentials = errors.New("no credentials")
	// ErrDenied: the store refused the credentials or their access to the
	// bucket (HTTP 401 or 403).
	ErrDenied = errors.New("access denied")
	// ErrNoBucket: the bucket does not exist (HTTP 404).
	ErrNoBucket = errors.New("no such bucket")
)

// Check makes sure, with one cheap request (HEAD of the bucket), that
// credentials are found, the store answers and the bucket exists and may
// be read, before work whose result would go nowhere. Its error wraps
// ErrNoCredentials, ErrDenied or ErrNoBucket when it is one of those.
func (c *Client) Check(ctx context.Context) error {
	if c.creds == nil {
		return fmt.Errorf("cannot reach %s: %w", c.loc, ErrNoCredentials)
	}
	req := c.start(ctx)
	_, err := c.creds.Retrieve(req.ctx)
	req.end()
	if err = req.err(err); err != nil {
		return fmt.Errorf("cannot reach %s: %w (%v)", c.loc, ErrNoCredentials, err)
	}
	if err := c.headBucket(ctx); err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) {
			switch re.HTTPStatusCode() {
			case http.StatusUnauthorized, http.StatusForbidden:
				return fmt.Errorf("cannot reach %s: %w (HTTP %d)", c.loc, ErrDenied, re.HTTPStatusCode())
			case http.StatusNotFound:
				return fmt.Errorf("cannot reach %s: %w", c.loc, ErrNoBucket)
			}
		}
		return fmt.Errorf("cannot reach %s: %w", c.loc, err)
	}
	return nil
}

func (c *Client) headBucket(ctx context.Context) error {
	req := c.start(ctx)
	defer req.end()
	_, err := c.s3.HeadBucket(req.ctx, &s3.HeadBucketInput{Bucket: aws.String(c.loc.Bucket)})
	return req.err(err)
}

// Endpoint returns the store's URL as given in Options, or "AWS S3".
func (c *Client) Endpoint() string {
	if c.endpoint == "" {
		return "AWS S3"
	}
	return c.endpoint
}

// StallError is the error of a request the store stopped answering.
type StallError struct {
	Endpoint string
	Timeout  time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("the object store (%s) sent nothing for %s; check that it is up and reachable", e.Endpoint, e.Timeout)
}

// request is one operation on the store under a watchdog: its context is
// canceled once no byte has moved for the client's timeout. Reading a
// body through reader counts as movement, and so does the SDK reading an
// upload's body through readSeeker as it sends it.
type request struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
}

func (c *Client) start(ctx context.Context) *request {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &request{ctx: ctx, cancel: cancel, timeout: c.timeout}
	stall := &StallError{Endpoint: c.Endpoint(), Timeout: c.timeout}
	r.timer = time.AfterFunc(c.timeout, func() { cancel(stall) })
	return r
}

func (r *request) moved() { r.timer.Reset(r.timeout) }

// err returns err, or the stall in its place when the watchdog ended the
// request.
func (r *request) err(err error) error {
	var stall *StallError
	if err != nil && errors.As(context.Cause(r.ctx), &stall) {
		return stall
	}
	return err
}

// end releases the request.
func (r *request) end() {
	r.timer.Stop()
	r.cancel(nil)
}

func (r *request) reader(rd io.Reader) io.Reader { return &movingReader{r: rd, req: r} }

type movingReader struct {
	r   io.Reader
	req *request
}

func (m *movingReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if n > 0 {
		m.req.moved()
	}
	return n, err
}

// movingReadSeeker is an upload's body: the SDK seeks it to hash the
// payload and to retry.
type movingReadSeeker struct {
	movingReader
	s io.Seeker
}

func (m *movingReadSeeker) Seek(off int64, whence int) (int64, error) { return m.s.Seek(off, whence) }

func (r *request) readSeeker(rs io.ReadSeeker) io.ReadSeeker {
	return &movingReadSeeker{movingReader: movingReader{r: rs, req: r}, s: rs}
}
