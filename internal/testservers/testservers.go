// Package testservers starts the real servers that kwdata's tests talk
// to (Mailpit for mail, stripe-mock for Stripe's API, Versity Gateway for
// S3, redis-server for the shared access store) on loopback, and
// skips a test, noting it for make test, when one is not installed.
package testservers

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Pinned versions, as .ci/run installs them.
const (
	MailpitVersion    = "v1.27.11"
	StripeMockVersion = "v0.203.0"
	VersityGWVersion  = "v1.8.0"
)

// StripeMockPrice is the price of every subscription stripe-mock
// StripeMockVersion answers: the --stripe-price of tests whose checkout
// must buy the paid tier.
const StripeMockPrice = "price_1PgafmB7WZ01zgkW6dKueIc5"

// SkipForTool skips tb because tool is missing, noting it in the file
// $KWDATA_SKIPPED names so that make test can list what it did not check
// and how to get the tool. Where they must run ($KWDATA_REQUIRE_SERVERS
// set, as .ci/run sets it after installing them) a missing tool fails
// the test instead.
func SkipForTool(tb testing.TB, tool, howTo string) {
	tb.Helper()
	if os.Getenv("KWDATA_REQUIRE_SERVERS") != "" {
		tb.Fatalf("%s is not installed, and CI must run this test: %s", tool, howTo)
	}
	if f := os.Getenv("KWDATA_SKIPPED"); f != "" {
		if out, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintf(out, "%s needs %s: %s\n", tb.Name(), tool, howTo)
			out.Close()
		}
	}
	tb.Skipf("%s is not installed: %s", tool, howTo)
}

// lookTool finds a Go-installed tool on PATH or in GOBIN/GOPATH/bin.
func lookTool(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p, true
		}
	}
	return "", false
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago: for a server to listen on, or, left alone, an address nothing
// listens on.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startWithin bounds how long a server may take to answer after it
// starts: a few hundred milliseconds on an idle machine, tens of seconds
// on a loaded one.
const startWithin = 60 * time.Second

// start runs a server process until the test ends and waits (at most
// startWithin) until ready reports it answers.
func start(tb testing.TB, name string, args []string, ready func() bool) {
	tb.Helper()
	path, _ := lookTool(name)
	cmd := exec.Command(path, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("cannot start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(startWithin); time.Now().Before(deadline); {
		select {
		case <-exited:
			tb.Fatalf("%s exited at start:\n%s", name, out.String())
		default:
		}
		if ready() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("%s did not answer within %s", name, startWithin)
}

// Mailpit is a running Mailpit: an SMTP server that keeps what it gets,
// and an HTTP API to read it back.
type Mailpit struct {
	SMTP string // host:port of its SMTP server
	API  string // base URL of its HTTP API
}

// StartMailpit runs Mailpit on free loopback ports until the test ends,
// or skips the test when it is not installed. authAny makes its SMTP
// server ask for (and accept any) login, over plain text.
func StartMailpit(tb testing.TB, authAny bool) *Mailpit {
	tb.Helper()
	if _, ok := lookTool("mailpit"); !ok {
		SkipForTool(tb, "mailpit", "go install github.com/axllent/mailpit@"+MailpitVersion)
	}
	m := &Mailpit{SMTP: FreeAddr(tb)}
	httpAddr := FreeAddr(tb)
	m.API = "http://" + httpAddr
	args := []string{"--smtp", m.SMTP, "--listen", httpAddr, "--database", filepath.Join(tb.TempDir(), "mailpit.db"),
		"--quiet", "--disable-version-check"}
	if authAny {
		args = append(args, "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")
	}
	start(tb, "mailpit", args, func() bool {
		resp, err := http.Get(m.API + "/api/v1/info")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return m
}

// Message is one message Mailpit holds.
type Message struct {
	ID      string
	Subject string
	From    struct{ Name, Address string }
	To      []struct{ Name, Address string }
	Text    string
}

// Last returns the newest message to address, waiting up to 10 s for
// one to arrive.
func (m *Mailpit) Last(tb testing.TB, address string) Message {
	tb.Helper()
	for range 200 {
		var list struct{ Messages []Message }
		m.get(tb, "/api/v1/search?query="+url.QueryEscape("to:"+address), &list)
		if len(list.Messages) > 0 {
			var msg Message
			m.get(tb, "/api/v1/message/"+list.Messages[0].ID, &msg)
			return msg
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("no mail to %s reached Mailpit within 10s", address)
	return Message{}
}

// Count returns how many messages Mailpit holds.
func (m *Mailpit) Count(tb testing.TB) int {
	tb.Helper()
	var list struct {
		Total int `json:"total"`
	}
	m.get(tb, "/api/v1/messages", &list)
	return list.Total
}

func (m *Mailpit) get(tb testing.TB, path string, v any) {
	tb.Helper()
	resp, err := http.Get(m.API + path)
	if err != nil {
		tb.Fatalf("Mailpit API: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		tb.Fatalf("Mailpit API %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("Mailpit API %s: %v", path, err)
	}
}

// StartStripeMock runs stripe-mock on a free loopback port until the test
// ends and returns its base URL, or skips the test when it is not
// installed.
func StartStripeMock(tb testing.TB) string {
	tb.Helper()
	if _, ok := lookTool("stripe-mock"); !ok {
		SkipForTool(tb, "stripe-mock", "go install github.com/stripe/stripe-mock@"+StripeMockVersion)
	}
	addr := FreeAddr(tb)
	// stripe-mock also serves HTTPS, by default on :12112 of every
	// interface: a second test's mock (or anyone's) then fails to start.
	// Its HTTPS goes on a loopback port of the system's choosing instead.
	start(tb, "stripe-mock", []string{"-http-addr", addr, "-https-addr", "127.0.0.1:"}, func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return "http://" + addr
}

// Redis is a running redis-server on loopback, with AOF persistence
// (appendfsync everysec) in a folder of the test, as the operations guide
// recommends. Stop and Start let a test take it away and bring it back on
// the same port with the same data.
type Redis struct {
	Addr string // host:port
	dir  string
	tb   testing.TB
	cmd  *exec.Cmd
	exit chan struct{}
	out  *strings.Builder
}

// URL is the redis:// URL of the server's database 0.
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// StartRedis runs redis-server on a free loopback port until the test
// ends, or skips the test when it is not installed.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		SkipForTool(tb, "redis-server", "apt-get install redis-server")
	}
	r := &Redis{Addr: FreeAddr(tb), dir: tb.TempDir(), tb: tb}
	r.Start()
	tb.Cleanup(func() { r.Stop() })
	return r
}

// Start starts the server again after Stop and waits (at most
// startWithin) until it answers PING.
func (r *Redis) Start() {
	r.tb.Helper()
	if r.cmd != nil {
		return
	}
	_, port, _ := net.SplitHostPort(r.Addr)
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "",
		"--appendonly", "yes", "--appendfsync", "everysec", "--dir", r.dir)
	r.out = &strings.Builder{}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		r.tb.Fatalf("cannot start redis-server: %v", err)
	}
	r.exit = make(chan struct{})
	go func(c *exec.Cmd, exit chan struct{}) { c.Wait(); close(exit) }(r.cmd, r.exit)
	for deadline := time.Now().Add(startWithin); time.Now().Before(deadline); {
		select {
		case <-r.exit:
			r.tb.Fatalf("redis-server exited at start:\n%s", r.out.String())
		default:
		}
		if r.ping() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.tb.Fatalf("redis-server did not answer within %s:\n%s", startWithin, r.out.String())
}

// Stop stops the server (SIGTERM, so the AOF is complete) and waits for it
// to exit.
func (r *Redis) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exit:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-r.exit
	}
	r.cmd = nil
}

// ping speaks just enough RESP to ask for PONG.
func (r *Redis) ping() bool {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	return strings.HasPrefix(string(buf[:n]), "+PONG")
}

// S3 is a running Versity Gateway: an S3 API over a folder of the test's
// (the POSIX backend: bucket b's object k is the file Dir/b/k).
type S3 struct {
	Endpoint          string // http://127.0.0.1:PORT
	Dir               string // the backend folder
	AccessKey, Secret string // the root credentials
}

// Env returns the environment of a process that should reach the
// gateway through the standard AWS chain: s's credentials and a region,
// and no shared config of the machine's.
func (s *S3) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.Secret,
		"AWS_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
}

// StartS3 runs Versity Gateway on a free loopback port with a POSIX
// backend in a temporary folder until the test ends, or skips the test
// when it is not installed. No bucket exists yet.
func StartS3(tb testing.TB) *S3 {
	tb.Helper()
	if _, ok := lookTool("versitygw"); !ok {
		SkipForTool(tb, "versitygw", "go install github.com/versity/versitygw/cmd/versitygw@"+VersityGWVersion)
	}
	addr := FreeAddr(tb)
	s := &S3{Endpoint: "http://" + addr, Dir: tb.TempDir(), AccessKey: "kwdatatest", Secret: "kwdatatestsecret"}
	start(tb, "versitygw", []string{"--access", s.AccessKey, "--secret", s.Secret, "--port", addr, "--quiet", "posix", s.Dir}, func() bool {
		// Any HTTP answer (403 without a signature) means it listens.
		resp, err := http.Get(s.Endpoint + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return s
}
