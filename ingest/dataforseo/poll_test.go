package dataforseo

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestFetchSERPsFullReadyPage checks how long the client waits between
// tasks_ready polls, on the injected clock: after a full page (the service
// lists at most readyPageSize tasks, and shows the next ones only once
// those are collected) it polls again after readyMinGap, not PollInterval;
// after a shorter page, or a full page of tasks that are not its own, it
// waits the interval.
func TestFetchSERPsFullReadyPage(t *testing.T) {
	const poll = 20 * time.Second
	tests := []struct {
		name     string
		keywords int
		perPoll  int // the fake's page size
		foreign  int // ready tasks of another program of the account, listed first
		maxWait  time.Duration
		polls    int
		sleeps   []time.Duration
	}{
		{"2,500 ready: two full pages then the rest", 2500, readyPageSize, 0, 0,
			3, []time.Duration{readyMinGap, readyMinGap}},
		{"pages one short of full wait the interval", 1500, readyPageSize - 1, 0, 0,
			2, []time.Duration{poll}},
		{"a full page of foreign tasks waits the interval", 5, readyPageSize, readyPageSize, time.Minute,
			4, []time.Duration{poll, poll, poll}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDFS(t)
			f.perPoll = tt.perPoll
			f.addForeign(tt.foreign)
			c, clock := newTestClient(t, f.config(), Options{PollInterval: poll, MaxWait: tt.maxWait})
			var kws []string
			for i := range tt.keywords {
				kws = append(kws, fmt.Sprintf("keyword %04d", i))
			}
			got, stats, err := c.FetchSERPs(context.Background(), us(t), kws)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.keywords || stats.Posted != tt.keywords || stats.Pending != 0 {
				t.Errorf("%d SERPs, stats %+v; want all %d collected", len(got), stats, tt.keywords)
			}
			f.mu.Lock()
			polls := f.polls
			f.mu.Unlock()
			if polls != tt.polls || !slices.Equal(clock.sleeps, tt.sleeps) {
				t.Errorf("%d polls, sleeps %v; want %d polls, sleeps %v", polls, clock.sleeps, tt.polls, tt.sleeps)
			}
		})
	}
}
