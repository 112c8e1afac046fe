package main

import (
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// testIdleAdminShutdown: a client connected to the admin socket that sends
// nothing does not hold up a SIGTERM. The server exits well within
// systemd's stop timeout (it used to wait a minute for the client, past
// TimeoutStopSec=30s, and was killed before its final flush), and every
// lookup it counted is on disk afterwards.
func (env *tiersEnv) testIdleAdminShutdown(t *testing.T) {
	data := env.fresh(t)
	key, id := env.createKey(t, data, "--tier", "registered")
	s := env.start(t, data)
	const reg = 9
	for i := range reg {
		tiersWantStatus(t, s.lookup(t, env.keywords[i], "Authorization", "Bearer "+key), 200, "")
	}
	idle, err := net.Dial("unix", filepath.Join(accessDir(data), "admin.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The server has accepted the connection once it answers a second
	// client's command: it accepts in order.
	env.cli(t, "keys", "list", "--data", data)

	stopped := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		if s.err != nil {
			t.Fatalf("serve after SIGTERM with an idle admin client: %v\n%s", s.err, s.stderr())
		}
	case <-time.After(25 * time.Second): // below systemd's 30 s, far above a clean stop
		t.Fatalf("kwdata serve still runs 25s after SIGTERM with an idle admin client\n%s", s.stderr())
	}
	t.Logf("stopped %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	out, _ := env.cli(t, "keys", "list", "--data", data)
	if !regexp.MustCompile(`(?m)^` + id + `\s.*\s` + strconv.Itoa(reg) + ` \(as of `).MatchString(out) {
		t.Errorf("keys list after SIGTERM with an idle admin client does not show %d lookups for %s:\n%s", reg, id, out)
	}
}
