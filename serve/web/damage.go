package web

import (
	"context"
	"errors"

	"github.com/kwdata/kwdata/kw"
	"github.com/prometheus/client_golang/prometheus"
)

type damageCounter struct {
	kw.Index
	n prometheus.Counter
}

func (d damageCounter) Lookup(ctx context.Context, country, keyword string) (kw.Entry, error) {
	e, err := d.Index.Lookup(ctx, country, keyword)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return e, err
}

// CountDamage returns idx with every lookup that meets a damaged index
// counted in n, whichever room (API, page, bulk, MCP) made it.
func CountDamage(idx kw.Index, n prometheus.Counter) kw.Index { return damageCounter{idx, n} }
