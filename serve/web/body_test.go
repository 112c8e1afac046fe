package web

import (
	"io"
	"net"
	"net/http"
	"testing"
)

// TestBodyReadErrorReasons pins how read errors map to reasons, and that
// each is a 400 invalid_body to Classify.
func TestBodyReadErrorReasons(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{io.ErrUnexpectedEOF, BodyIncomplete},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, BodyTimeout},
		{net.ErrClosed, BodyIncomplete},
		{http.ErrLineTooLong, BodyMalformed},
		{io.ErrNoProgress, BodyMalformed},
	} {
		err := bodyReadError(tc.err)
		be, ok := err.(*BodyError)
		if !ok || be.Reason != tc.want {
			t.Errorf("bodyReadError(%v) = %v, want reason %s", tc.err, err, tc.want)
		}
		if he := Classify(err); he.Status != http.StatusBadRequest || he.Code != CodeInvalidBody {
			t.Errorf("Classify(%v) = %d %s, want 400 invalid_body", err, he.Status, he.Code)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }

func (timeoutErr) Timeout() bool { return true }

func (timeoutErr) Temporary() bool { return true }
