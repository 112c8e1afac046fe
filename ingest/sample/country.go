package sample

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// keywordsPerChunk is the unit of parallel work: big enough to amortize the
// hand-off, small enough to keep memory flat.
const keywordsPerChunk = 4096

// generateCountry writes one country's two files into dir.
func generateCountry(ctx context.Context, opt Options, cc, dir string) (stats, error) {
	seed := countrySeed(opt.Seed, cc)
	p, err := buildPlan(cc, seed, opt.Keywords)
	if err != nil {
		return stats{}, err
	}
	hubCount, hubHead := 0, 0.0
	if opt.Shape == ShapeWeb {
		hubCount, hubHead = webHubs, webHubHead
	}
	r := &renderer{
		p:       p,
		hubs:    newHubs(cc, seed, opt.Keywords, opt.HubSkew, hubCount, hubHead),
		urlTail: opt.URLTail,
		sites:   newSitePool(cc, seed, len(p.voc.cats)),
		cc:      cc,
		months:  monthsBefore(opt.Now, opt.Months),
	}
	if opt.Shape == ShapeWeb {
		r.pool = newPool(seed, opt.Keywords)
		r.topicSize = topicSizes(p)
	}

	planner, err := createTemp(filepath.Join(dir, PlannerFile))
	if err != nil {
		return stats{}, err
	}
	defer planner.abort()
	serps, err := createTemp(filepath.Join(dir, SERPFile))
	if err != nil {
		return stats{}, err
	}
	defer serps.abort()

	// The planner file starts with the UTF-16LE byte order mark.
	if _, err := planner.w.Write([]byte{0xFF, 0xFE}); err != nil {
		return stats{}, planner.err(err)
	}
	head, err := encodeUTF16(plannerHeader(opt.Now, r.months))
	if err != nil {
		return stats{}, err
	}
	if _, err := planner.w.Write(head); err != nil {
		return stats{}, planner.err(err)
	}

	var total stats
	err = r.run(ctx, func(c *chunkOut) error {
		if _, err := planner.w.Write(c.planner); err != nil {
			return planner.err(err)
		}
		if _, err := serps.w.Write(c.serps); err != nil {
			return serps.err(err)
		}
		total.keywords += c.st.keywords
		total.plannerRows += c.st.plannerRows
		total.groups += c.st.groups
		total.serps += c.st.serps
		total.serpRows += c.st.serpRows
		return nil
	})
	if err != nil {
		return stats{}, err
	}
	if err := planner.commit(); err != nil {
		return stats{}, err
	}
	if err := serps.commit(); err != nil {
		return stats{}, err
	}
	return total, nil
}

// run renders the plan's groups in chunks on all cores and hands the chunks
// to write in order.
func (r *renderer) run(ctx context.Context, write func(*chunkOut) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type job struct {
		g0, g1 int32
		out    chan *chunkOut
	}
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan job)
	queue := make(chan chan *chunkOut, 2*workers)
	r.free = make(chan *chunkOut, 3*workers)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker(r)
			for j := range jobs {
				j.out <- w.render(j.g0, j.g1)
			}
		}()
	}
	go func() {
		defer close(jobs)
		defer close(queue)
		groups := r.p.groups
		for g0 := 0; g0 < len(groups); {
			g1, n := g0, int32(0)
			for g1 < len(groups) && n < keywordsPerChunk {
				n += groups[g1].end - groups[g1].first
				g1++
			}
			out := make(chan *chunkOut, 1)
			select {
			case queue <- out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{int32(g0), int32(g1), out}:
			case <-ctx.Done():
				return
			}
			g0 = g1
		}
	}()

	var err error
	for out := range queue {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			cancel()
			continue // drain, so the producer can finish
		}
		c := <-out
		err = write(c)
		select {
		case r.free <- c:
		default:
		}
	}
	wg.Wait()
	if err == nil {
		// The producer may have stopped before handing out every chunk.
		err = ctx.Err()
	}
	return err
}

// tempFile is an output file written under a temporary name and renamed
// into place by commit.
type tempFile struct {
	f     *os.File
	w     *bufio.Writer
	final string
	done  bool
}

func createTemp(final string) (*tempFile, error) {
	f, err := os.CreateTemp(filepath.Dir(final), "."+filepath.Base(final)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", final, err)
	}
	return &tempFile{f: f, w: bufio.NewWriterSize(f, 1<<20), final: final}, nil
}

func (t *tempFile) err(err error) error {
	return fmt.Errorf("cannot write %s: %w", t.final, err)
}

func (t *tempFile) commit() error {
	if err := t.w.Flush(); err != nil {
		return t.err(err)
	}
	if err := t.f.Close(); err != nil {
		return t.err(err)
	}
	if err := os.Rename(t.f.Name(), t.final); err != nil {
		return fmt.Errorf("cannot move %s into place: %w", t.final, err)
	}
	t.done = true
	return nil
}

// abort removes the temporary file unless commit succeeded.
func (t *tempFile) abort() {
	if !t.done {
		t.f.Close()
		os.Remove(t.f.Name())
	}
}
