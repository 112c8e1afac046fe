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
	"net/url"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
}

// Client publishes builds to, and fetches them from, one location.
type Client struct {
	s3      *s3.Client
	loc     Location
	workers int
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
	return &Client{s3: c, loc: loc, workers: opt.Workers}, nil
}

// Location returns where the client publishes.
func (c *Client) Location() Location { return c.loc }

// CreateBucket creates the client's bucket if it does not exist yet
// (setting up a store, and tests). Publishing needs an existing bucket.
func (c *Client) CreateBucket(ctx context.Context) error {
	if _, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(c.loc.Bucket)}); err == nil {
		return nil
	}
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.loc.Bucket)}); err != nil {
		return fmt.Errorf("cannot create bucket %s: %w", c.loc.Bucket, err)
	}
	return nil
}
