package index

import (
	"errors"
)

// pipe carries chunks of a partition from a reading goroutine to the
// merge, ahead chunks at most in flight, and hands the chunks the merge is
// done with back to the reader for reuse. The keywords and related
// streams each read on one, so that reading overlaps the merge.
type pipe[C any] struct {
	ch     chan *C
	free   chan *C
	done   chan struct{}
	finish chan struct{} // closed when the reader has returned
	err    error         // the reader's error; read after finish

	chunk *C // the merge's current chunk
}

// startPipe runs read on its own goroutine. read sends its chunks with
// send and ends when send fails (the merge closed the pipe) or its
// partition is read.
func startPipe[C any](ahead int, read func(p *pipe[C]) error) *pipe[C] {
	p := &pipe[C]{ch: make(chan *C, ahead), free: make(chan *C, ahead+2),
		done: make(chan struct{}), finish: make(chan struct{})}
	go func() {
		defer close(p.finish)
		defer close(p.ch)
		if err := read(p); !errors.Is(err, errStopScan) {
			p.err = err
		}
	}()
	return p
}

// send hands c to the merge; it returns errStopScan once the merge has
// closed the pipe.
func (p *pipe[C]) send(c *C) error {
	select {
	case p.ch <- c:
		return nil
	case <-p.done:
		return errStopScan
	}
}

// reuse returns a chunk the merge is done with, or nil.
func (p *pipe[C]) reuse() *C {
	select {
	case c := <-p.free:
		return c
	default:
		return nil
	}
}

// advance hands the merge's current chunk back for reuse and returns the
// next, or nil at the end.
func (p *pipe[C]) advance() *C {
	if p.chunk != nil {
		select {
		case p.free <- p.chunk:
		default:
		}
		p.chunk = nil
	}
	c, more := <-p.ch
	if !more {
		return nil
	}
	p.chunk = c
	return c
}

// close stops the reader and waits for it; it returns the reader's error.
func (p *pipe[C]) close() error {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	for range p.ch { // unblock a reader mid-send
	}
	<-p.finish
	return p.err
}
