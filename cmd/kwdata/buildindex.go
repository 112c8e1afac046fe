package main

import (
	"context"
	"fmt"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/pipelines"
)

func (m *Main) runBuildIndex(ctx context.Context, args []string) error {
	fs := m.newFlagSet("build-index", "--data DIR --date YYYY-MM-DD")
	data := fs.String("data", "", "data folder (required)")
	date := fs.String("date", "", "data date of the lake to compile, YYYY-MM-DD (required)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"data", *data}, [2]string{"date", *date}); err != nil {
		return err
	}
	if err := checkDate(*date); err != nil {
		return err
	}
	if err := existingData(*data); err != nil {
		return err
	}
	release, err := m.runLock(*data, "build the index")
	if err != nil {
		return err
	}
	defer release()
	man, err := m.buildIndex(ctx, *data, *date)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "published index %s: data date %s, %d keywords in %d countries, %d bytes\n",
		man.BuildID, man.DataDate, man.Keys, len(man.Countries), man.Bytes)
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

func (m *Main) buildIndex(ctx context.Context, data, date string) (index.Manifest, error) {
	update, finish := m.progress("build-index")
	defer finish()
	man, err := index.Build(ctx, index.BuildOptions{
		Data: data, Date: date, Logger: m.Logger,
		Progress: func(done, total int) { update(int64(done), int64(total)) },
	})
	if err != nil {
		return man, fmt.Errorf("cannot build the index of %s: %w", date, err)
	}
	return man, nil
}
