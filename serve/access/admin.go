package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// The admin socket, <Dir>/admin.sock, is how `kwdata keys` changes keys
// while a server holds the account database: a Unix socket only the
// folder's owner can open (mode 0600), one JSON request and one JSON
// answer per connection.

// adminRequest is one command of `kwdata keys`.
type adminRequest struct {
	Op        string    `json:"op"` // create, revoke, set-tier, list
	IDOrKey   string    `json:"id_or_key,omitempty"`
	Tier      Tier      `json:"tier,omitempty"`
	Email     string    `json:"email,omitempty"`
	PaidUntil time.Time `json:"paid_until,omitzero"`
}

// adminResponse is its answer. Kind names the sentinel error an Error
// wraps, so callers can still use errors.Is.
type adminResponse struct {
	Key     string      `json:"key,omitempty"`
	Record  *KeyRecord  `json:"record,omitempty"`
	Records []KeyRecord `json:"records,omitempty"`
	Error   string      `json:"error,omitempty"`
	Kind    string      `json:"kind,omitempty"`
}

// adminKinds are the sentinel errors that cross the socket.
var adminKinds = map[string]error{
	"email_taken":   ErrEmailTaken,
	"key_not_found": ErrKeyNotFound,
	"invalid_email": ErrInvalidEmail,
}

// remoteError is an error answered by the server, wrapping its sentinel.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// adminTimeout bounds one command on the socket; a listing of a million
// keys fits in it.
const adminTimeout = time.Minute

// adminAnswers reports whether a server listens on the socket at path.
func adminAnswers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// call sends one command to the server and returns its answer.
func (k *Keys) call(ctx context.Context, req adminRequest) (*adminResponse, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", k.remote)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the running server at %s: %w", k.remote, err)
	}
	defer c.Close()
	deadline := time.Now().Add(adminTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, fmt.Errorf("cannot send %s to the running server: %w", req.Op, err)
	}
	var resp adminResponse
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		return nil, fmt.Errorf("cannot read the running server's answer to %s: %w", req.Op, err)
	}
	if resp.Error != "" {
		return nil, &remoteError{msg: resp.Error, kind: adminKinds[resp.Kind]}
	}
	if req.Op == "create" && resp.Record == nil {
		return nil, errors.New("the running server created no key")
	}
	return &resp, nil
}

// adminServer answers the admin socket for a Store.
type adminServer struct {
	s  *Store
	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	closing bool                  // close has begun: no new connection is served
	conns   map[net.Conn]struct{} // connections being served
}

// listenAdmin opens the admin socket. The caller holds the account
// database, so a socket file already there is a dead server's.
func (s *Store) listenAdmin() (*adminServer, error) {
	path := s.opt.Dir + string(os.PathSeparator) + adminSockName
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("cannot open the admin socket %s for kwdata keys: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("cannot restrict the admin socket %s: %w", path, err)
	}
	a := &adminServer{s: s, ln: ln, conns: make(map[net.Conn]struct{})}
	a.wg.Add(1)
	go a.serve()
	return a, nil
}

func (a *adminServer) serve() {
	defer a.wg.Done()
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return // closed
		}
		// The deadline is set before close can see the connection, so
		// that close's earlier read deadline is the one that stays.
		c.SetDeadline(time.Now().Add(adminTimeout))
		a.mu.Lock()
		if a.closing {
			a.mu.Unlock()
			c.Close()
			continue
		}
		a.conns[c] = struct{}{}
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			defer a.forget(c)
			a.handle(c)
		}()
	}
}

func (a *adminServer) forget(c net.Conn) {
	a.mu.Lock()
	delete(a.conns, c)
	a.mu.Unlock()
}

// stopping reports whether close has begun.
func (a *adminServer) stopping() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closing
}

// close stops accepting, ends the connections still waiting for their
// command, and waits for the commands in progress, so that none is cut
// off by the database closing under it. A client that connects and sends
// nothing would otherwise hold the shutdown for adminTimeout, past a
// service manager's stop timeout, and the final flush of the counters
// would never run.
func (a *adminServer) close() {
	a.ln.Close()
	a.mu.Lock()
	a.closing = true
	now := time.Now()
	for c := range a.conns {
		// Only the command is read; a command already read runs on and
		// its answer is still written.
		c.SetReadDeadline(now)
	}
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *adminServer) handle(c net.Conn) {
	defer c.Close()
	var req adminRequest
	if err := json.NewDecoder(io.LimitReader(c, 1<<16)).Decode(&req); err != nil {
		msg := "cannot read the command: " + err.Error()
		if a.stopping() {
			msg = "the server is stopping; run the command again once it is back, or with it stopped"
		}
		json.NewEncoder(c).Encode(adminResponse{Error: msg})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp adminResponse
	var err error
	switch req.Op {
	case "create":
		var rec KeyRecord
		resp.Key, rec, err = a.s.CreateKey(ctx, req.Tier, req.Email, req.PaidUntil)
		resp.Record = &rec
	case "revoke":
		err = a.s.RevokeKey(ctx, req.IDOrKey)
	case "set-tier":
		err = a.s.SetTier(ctx, req.IDOrKey, req.Tier, req.PaidUntil)
	case "list":
		resp.Records, err = a.s.ListKeys(ctx)
	default:
		err = fmt.Errorf("unknown command %q", req.Op)
	}
	if err != nil {
		resp = adminResponse{Error: err.Error()}
		for name, kind := range adminKinds {
			if errors.Is(err, kind) {
				resp.Kind = name
			}
		}
	}
	a.s.log.Info("key command from the admin socket", "op", req.Op, "ok", err == nil)
	json.NewEncoder(c).Encode(resp)
}
