package agent

import (
	"net/http"
	"testing"
)

// TestMCPAnswerCap: an answer beyond MaxMCPAnswer is never sent, even if
// the SDK wrote one.
func TestMCPAnswerCap(t *testing.T) {
	a := &mcpAnswer{header: http.Header{}}
	chunk := make([]byte, 1<<20)
	var err error
	for i := 0; i < MaxMCPAnswer/len(chunk)+1 && err == nil; i++ {
		_, err = a.Write(chunk)
	}
	if err == nil || !a.over || a.body.Len() > MaxMCPAnswer {
		t.Errorf("after %d bytes: err %v, over %v", a.body.Len(), err, a.over)
	}
}
