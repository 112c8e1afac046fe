package oauth_test

import (
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/kwdata/kwdata/serve/oauth/oauthtest"
)

// TestMemStoreConforms holds the protocol tests' in-memory Store to the
// same contract as the access store's, so that a protocol test cannot
// pass on a fake more lenient than the real store.
func TestMemStoreConforms(t *testing.T) {
	oauthtest.TestStore(t, func(t *testing.T, now func() time.Time) oauth.Store { return oauth.NewMemStore(now) })
}
