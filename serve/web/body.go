package web

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// Reasons a request body could not be read, as BodyError.Reason and the
// reason label of kwdata_http_body_errors_total.
const (
	BodyMalformed  = "malformed"  // broken chunked framing or another protocol error
	BodyIncomplete = "incomplete" // shorter than announced: the client stopped sending or reset
	BodyTimeout    = "timeout"    // not complete within the server's read timeout
)

// BodyError is a request body the client failed to deliver whole. It is
// always the client's fault, never the server's: Classify answers it 400
// invalid_body (nothing at all when the client is gone), it is logged at
// Debug and counted in kwdata_http_body_errors_total, not as a 5xx.
type BodyError struct {
	Reason string // BodyMalformed, BodyIncomplete or BodyTimeout
	Err    error  // what reading the body returned
}

// Error describes the failure for the log.
func (e *BodyError) Error() string {
	return "cannot read the request body (" + e.Reason + "): " + e.Err.Error()
}

// Unwrap returns what reading the body returned.
func (e *BodyError) Unwrap() error { return e.Err }

// bodyReadError wraps an error from reading a request body as a
// *BodyError. Every such error comes from the connection or the client's
// framing: net/http has already taken the bytes off the wire.
func bodyReadError(err error) error {
	var be *BodyError
	if errors.As(err, &be) {
		return err
	}
	reason := BodyMalformed
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		reason = BodyTimeout
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		reason = BodyIncomplete
	}
	return &BodyError{Reason: reason, Err: err}
}

// ReadBody reads a request body of at most limit bytes. A longer one is a
// 413 HTTPError; one the client fails to deliver (a bad chunk length, a
// body shorter than its Content-Length, one too slow) is a *BodyError.
// Every handler that takes a body reads it here, so those failures are
// answered and counted the same way on every route.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, bodyReadError(err)
	}
	if int64(len(body)) > limit {
		return nil, HTTPError{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
			Msg: fmt.Sprintf("The request body exceeds %d bytes; send fewer or shorter keywords.", limit)}
	}
	return body, nil
}

// ReadTimeout is how long a client may take to send a whole request,
// headers and body (http.Server.ReadTimeout of Serve).
const ReadTimeout = 15 * time.Second
