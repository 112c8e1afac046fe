package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/index/objstore"
	"github.com/kwdata/kwdata/pipelines"
)

func (m *Main) runBuildIndex(ctx context.Context, args []string) error {
	fs := m.newFlagSet("build-index", "--data DIR --date YYYY-MM-DD [--allow-missing-related] [--allow-shrink] [--publish s3://BUCKET/PREFIX [--s3-endpoint URL]]")
	data := fs.String("data", "", "data folder (required)")
	date := fs.String("date", "", "data date of the lake to compile, YYYY-MM-DD (required)")
	var allow publishGuards
	allow.flags(fs.FlagSet)
	publish := fs.String("publish", "", "also upload the build to s3://BUCKET/PREFIX, where servers started with --index follow it (default: the data folder only)")
	var s3 s3Flags
	s3.register(fs)
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"data", *data}, [2]string{"date", *date}); err != nil {
		return err
	}
	if err := checkDate(*date); err != nil {
		return err
	}
	var store *objstore.Client
	if *publish != "" {
		var err error
		if store, err = m.objectStore(ctx, "publish", *publish, *s3.endpoint); err != nil {
			return err
		}
	} else if *s3.endpoint != "" {
		return usageError{errors.New("--s3-endpoint needs --publish s3://BUCKET/PREFIX")}
	}
	if err := existingData(*data); err != nil {
		return err
	}
	if store != nil {
		if err := m.checkTarget(ctx, store, "--s3-endpoint"); err != nil {
			return err
		}
	}
	release, err := m.runLock(*data, "build the index")
	if err != nil {
		return err
	}
	defer release()
	man, err := m.buildIndexUpload(ctx, *data, *date, allow, store)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "published index %s: data date %s, %s in %s, %d bytes\n",
		man.BuildID, man.DataDate, count(man.Keys, "keyword", "keywords"), count(len(man.Countries), "country", "countries"), man.Bytes)
	return nil
}

// runLock takes the pipeline's run lock of data for a manual stage command,
// so that it never overlaps a scheduled or manual run: a manual build of an
// older date finishing after a run's build would publish over it. what
// completes "cannot …" in the refusal, which names the holder. The
// pipeline's own stages run under the run's lock and call the stage
// functions (buildIndex, similarity), never the command wrappers.
func (m *Main) runLock(data, what string) (release func(), err error) {
	unlock, err := pipelines.Lock(data, m.Logger)
	if err != nil {
		return nil, fmt.Errorf("cannot %s: %w", what, err)
	}
	return func() {
		if err := unlock(); err != nil {
			m.Logger.Error("cannot release the run lock", "err", err)
		}
	}, nil
}

// publishGuards are the overrides of the checks build-index makes before
// it publishes; kwdata run takes them too, for one run.
type publishGuards struct {
	allowMissingRelated, allowShrink bool
}

func (g *publishGuards) flags(fs *flag.FlagSet) {
	fs.BoolVar(&g.allowMissingRelated, "allow-missing-related", false, "publish although a country with keywords has no related keywords on the date: no related partition, or one without rows beside SERPs")
	fs.BoolVar(&g.allowShrink, "allow-shrink", false, "publish although a country of the published index would lose all or more than half of its keywords")
}

func (m *Main) buildIndex(ctx context.Context, data, date string, allow publishGuards) (index.Manifest, error) {
	return m.buildIndexUpload(ctx, data, date, allow, nil)
}

// buildIndexUpload builds the index of date and, with store set, uploads
// the build to it before the data folder points at it (uploadFirst).
func (m *Main) buildIndexUpload(ctx context.Context, data, date string, allow publishGuards, store *objstore.Client) (index.Manifest, error) {
	update, finish := m.progress("build-index", "keywords")
	defer finish()
	opt := index.BuildOptions{
		Data: data, Date: date, Logger: m.Logger,
		Progress:            func(done, total int) { update(int64(done), int64(total)) },
		AllowMissingRelated: allow.allowMissingRelated,
		AllowShrink:         allow.allowShrink,
	}
	if store != nil {
		opt.BeforePublish = m.uploadFirst(store, data)
	}
	man, err := index.Build(ctx, opt)
	if err != nil {
		return man, fmt.Errorf("cannot build the index of %s: %w", date, err)
	}
	return man, nil
}
