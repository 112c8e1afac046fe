package googleads

import (
	"sync"
	"time"
)

// pacer hands out request slots at most one every interval. It holds no
// clock of its own: callers pass the time, so tests drive it with a fake
// clock, and a reservation is the delay the caller must wait.
type pacer struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

func newPacer(rps float64) *pacer {
	return &pacer{interval: time.Duration(float64(time.Second) / rps)}
}

// reserve books the next free slot and returns how long to wait for it.
func (p *pacer) reserve(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next.Before(now) {
		p.next = now
	}
	wait := p.next.Sub(now)
	p.next = p.next.Add(p.interval)
	return wait
}

// The planner's limits apply per developer token and account, not per
// Client value, so clients of one process that share them share a pacer.
var (
	pacersMu sync.Mutex
	pacers   = map[string]*pacer{}
)

func sharedPacer(key string, rps float64) *pacer {
	pacersMu.Lock()
	defer pacersMu.Unlock()
	p, ok := pacers[key]
	if !ok {
		p = newPacer(rps)
		pacers[key] = p
	} else if d := newPacer(rps).interval; d > p.interval {
		// Of two configured paces the slower one wins.
		p.mu.Lock()
		p.interval = d
		p.mu.Unlock()
	}
	return p
}
