package serve

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// net/http moves a keep-alive connection's deadlines about eight times a
// request: the read deadline to the end of the whole request, to none for
// the background read, to the past to stop that read and back to none, to
// the idle timeout and to the header timeout; the write deadline to the
// write timeout and back to none. Each move stops or resets a runtime
// timer, and with all four timeouts set that was a microsecond of every
// lookup. Almost every move pushes the deadline later, and a later
// deadline needs no timer change until the earlier one fires: lazyConn
// arms the connection only when a deadline moves earlier (or is set on a
// connection that has none), and when an armed deadline fires before the
// one asked for, it arms the one asked for and resumes the read or write.
// A deadline therefore never fires later than asked, nor ends a read or
// write earlier than asked.

// lazyListener hands out lazyConns.
type lazyListener struct {
	net.Listener
	// horizon bounds how far ahead a connection with no deadline, or a
	// distant one, is armed after a timeout: short enough that the next
	// request's header deadline lies beyond it (and so needs no timer
	// change), long enough that an idle connection wakes rarely.
	horizon time.Duration
}

func (l lazyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newLazyConn(c, l.horizon), nil
}

// lazyConn is a net.Conn whose deadlines move lazily (see above).
type lazyConn struct {
	net.Conn
	read, write lazyDeadline
}

func newLazyConn(c net.Conn, horizon time.Duration) *lazyConn {
	lc := &lazyConn{Conn: c}
	lc.read = lazyDeadline{arm: c.SetReadDeadline, horizon: horizon}
	lc.write = lazyDeadline{arm: c.SetWriteDeadline, horizon: horizon}
	return lc
}

func (c *lazyConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !c.read.early() {
			return n, err
		}
	}
}

func (c *lazyConn) Write(p []byte) (int, error) {
	written := 0
	for {
		n, err := c.Conn.Write(p[written:])
		written += n
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || !c.write.early() {
			return written, err
		}
	}
}

func (c *lazyConn) SetDeadline(t time.Time) error {
	return errors.Join(c.read.set(t), c.write.set(t))
}

func (c *lazyConn) SetReadDeadline(t time.Time) error  { return c.read.set(t) }
func (c *lazyConn) SetWriteDeadline(t time.Time) error { return c.write.set(t) }

// CloseWrite half-closes a TCP connection, as net/http does before it
// closes one whose request body it did not read.
func (c *lazyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// lazyDeadline is one direction's deadline of a lazyConn.
type lazyDeadline struct {
	arm     func(time.Time) error // the connection's own setter
	horizon time.Duration

	mu    sync.Mutex // set runs beside a blocked Read (net/http stops its background read so)
	want  time.Time  // the deadline asked for; zero for none
	armed time.Time  // the deadline the connection has; zero for none
}

// set records t as the deadline and arms the connection only if t is
// earlier than what it has (or it has none).
func (d *lazyDeadline) set(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.want = t
	if t.IsZero() || (!d.armed.IsZero() && !t.Before(d.armed)) {
		return nil
	}
	if err := d.arm(t); err != nil {
		return err
	}
	d.armed = t
	return nil
}

// early is called after the connection's deadline fired. It reports
// whether that was before the deadline asked for, and if so arms the
// connection again, at the deadline asked for or at most horizon ahead.
func (d *lazyDeadline) early() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if !d.want.IsZero() && !now.Before(d.want) {
		return false
	}
	t := now.Add(d.horizon)
	if !d.want.IsZero() && d.want.Before(t) {
		t = d.want
	}
	if err := d.arm(t); err != nil {
		return false
	}
	d.armed = t
	return true
}
