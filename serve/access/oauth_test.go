package access

import (
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/kwdata/kwdata/serve/oauth/oauthtest"
)

func TestOAuthStoreEmbedded(t *testing.T) {
	oauthtest.TestStore(t, func(t *testing.T, now func() time.Time) oauth.Store {
		return openStore(t, t.TempDir(), &clock{t: now()}, func(o *Options) { o.Now = now }).ForOAuth()
	})
}

func TestOAuthStoreRedis(t *testing.T) {
	oauthtest.TestStore(t, func(t *testing.T, now func() time.Time) oauth.Store {
		rd := testservers.StartRedis(t)
		return openRedisStores(t, rd, 1, Options{Now: now, FlushInterval: time.Hour})[0].ForOAuth()
	})
}
