package access

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts, by tier, the lookups a Store counts and the requests its
// allowances refuse. Every child counter is resolved once here, so counting
// costs an atomic add and no label hashing on the hot path.
type Metrics struct {
	lookups  [3]prometheus.Counter // by tierIndex
	refusals [3]prometheus.Counter
}

// NewMetrics registers kwdata_lookups_total{tier} and
// kwdata_quota_refusals_total{tier} with reg; pass the result to
// Options.Metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kwdata_lookups_total",
		Help: "Lookups counted against an allowance (answered 200 or 404), by access tier.",
	}, []string{"tier"})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kwdata_quota_refusals_total",
		Help: "Requests refused because the caller's lookup allowance could not cover them, by access tier.",
	}, []string{"tier"})
	reg.MustRegister(lookups, refusals)
	m := &Metrics{}
	for i, t := range []Tier{Anonymous, Registered, Paid} {
		m.lookups[i] = lookups.WithLabelValues(string(t))
		m.refusals[i] = refusals.WithLabelValues(string(t))
	}
	return m
}

// tierIndex numbers the tiers for Metrics' arrays; -1 for an unknown one.
func tierIndex(t Tier) int {
	switch t {
	case Anonymous:
		return 0
	case Registered:
		return 1
	case Paid:
		return 2
	}
	return -1
}

// lookupCounter returns the counter Commit adds t's lookups to, or nil.
func (m *Metrics) lookupCounter(t Tier) prometheus.Counter {
	if i := tierIndex(t); m != nil && i >= 0 {
		return m.lookups[i]
	}
	return nil
}

// refused counts one refusal of a t caller.
func (m *Metrics) refused(t Tier) {
	if i := tierIndex(t); m != nil && i >= 0 {
		m.refusals[i].Inc()
	}
}
