package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/index/objstore"
	"github.com/prometheus/client_golang/prometheus"
)

// s3Flags are the object store flags build-index and serve share.
type s3Flags struct {
	endpoint *string
}

func (f *s3Flags) register(fs *flagSet) {
	f.endpoint = fs.String("s3-endpoint", "", "URL of an S3-compatible store other than AWS S3 (MinIO, Ceph, R2), e.g. http://minio:9000; path-style requests (default: AWS S3; credentials and region come from the AWS environment variables and shared config)")
}

// objectStore checks an s3:// location given to flag and returns a client
// of it, with credentials and region from the standard AWS chain
// (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/config, …).
func (m *Main) objectStore(ctx context.Context, flag, rawURL, endpoint string) (*objstore.Client, error) {
	loc, err := objstore.ParseURL(rawURL)
	if err != nil {
		return nil, usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot load AWS credentials and region for %s: %w", loc, err)
	}
	c, err := objstore.New(cfg, loc, objstore.Options{Endpoint: endpoint})
	if err != nil {
		return nil, usageError{fmt.Errorf("--s3-endpoint: %w", err)}
	}
	return c, nil
}

// checkTarget makes one cheap request to the object store c builds are
// published to, showing that its credentials are found and its bucket
// answers: before a build, whose upload would otherwise fail only at its
// end. endpointFrom names where the endpoint is set, for the one-line
// error ("--s3-endpoint", or the configuration's publish.endpoint).
func (m *Main) checkTarget(ctx context.Context, c *objstore.Client, endpointFrom string) error {
	if err := c.Check(ctx); err != nil {
		var hint string
		switch {
		case errors.Is(err, objstore.ErrNoCredentials):
			hint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, and " + endpointFrom + " for a store other than AWS S3"
		case errors.Is(err, objstore.ErrDenied):
			hint = "check the credentials (AWS_ACCESS_KEY_ID or AWS_PROFILE) and " + endpointFrom
		case errors.Is(err, objstore.ErrNoBucket):
			hint = "create bucket " + c.Location().Bucket + ", or check its name and " + endpointFrom
		default:
			hint = "check that the store is up and " + endpointFrom + " (credentials: AWS_ACCESS_KEY_ID or AWS_PROFILE)"
		}
		line := strings.Join(strings.Fields(err.Error()), " ") // one line, whatever the SDK says
		return fmt.Errorf("cannot publish to %s at %s, so nothing was built: %s; %s", c.Location(), c.Endpoint(), line, hint)
	}
	return nil
}

// uploadFirst returns the BeforePublish of a build that must be in the
// object store c before the data folder points at it: if the upload
// fails, the build is removed and nothing is published, here or there.
func (m *Main) uploadFirst(c *objstore.Client, data string) func(context.Context, index.Manifest) error {
	return func(ctx context.Context, man index.Manifest) error {
		p, err := c.Publish(ctx, data, man.BuildID)
		if err != nil {
			return fmt.Errorf("nothing was published, here or in the object store, and the build was removed: %w", err)
		}
		secs := max(p.Elapsed.Seconds(), 1e-3)
		m.Logger.Info("uploaded index build", "build", p.BuildID, "to", c.Location().String(), "files", p.Files, "bytes", p.Bytes,
			"seconds", fmt.Sprintf("%.2f", secs), "mib_per_s", fmt.Sprintf("%.1f", float64(p.Bytes)/(1<<20)/secs))
		fmt.Fprintf(m.Stdout, "uploaded index %s to %s: %d files, %d bytes in %s\n", p.BuildID, c.Location(), p.Files, p.Bytes, p.Elapsed.Round(time.Millisecond))
		return nil
	}
}

// startIndexSync keeps cfg.data's index on the build published in the
// object store cfg.index names, switching store to each new one, until
// ctx is done. It returns the syncer, for SIGHUP.
func (m *Main) startIndexSync(ctx context.Context, cfg serveConfig, store *index.Store, reg prometheus.Registerer) (*objstore.Syncer, error) {
	c, err := m.objectStore(ctx, "index", cfg.index, cfg.s3Endpoint)
	if err != nil {
		return nil, err
	}
	s, err := objstore.NewSyncer(c, objstore.SyncOptions{
		Data: cfg.data, Logger: m.Logger.With("component", "index-sync"), Reload: store.Reload,
		Metrics: objstore.NewMetrics(reg),
	})
	if err != nil {
		return nil, err
	}
	m.Logger.Info("following the index published in the object store", "store", c.Location().String())
	go s.Run(ctx)
	return s, nil
}
