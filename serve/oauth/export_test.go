package oauth

import "time"

// NewMemStore gives the external conformance test the in-memory Store the
// protocol tests run on.
func NewMemStore(now func() time.Time) Store { return newMemStore(now) }
