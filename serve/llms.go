package serve

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"text/template"
)

// llmsTxt is GET /llms.txt in the llms.txt format (an H1 title, a
// blockquote summary, details, then sections of link lists), with links
// made absolute for the host that was asked.
//
//go:embed llms.txt
var llmsTxt string

var llmsTmpl = template.Must(template.New("llms.txt").Parse(llmsTxt))

// handleLLMs answers GET /llms.txt.
func (s *Server) handleLLMs(w http.ResponseWriter, r *http.Request) error {
	var buf bytes.Buffer
	if err := llmsTmpl.Execute(&buf, struct{ Base string }{s.baseURL(r)}); err != nil {
		return fmt.Errorf("cannot render llms.txt: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
	return nil
}

// baseURL is the scheme and host the client used, for absolute links:
// https when the connection is TLS or a trusted proxy says so
// (X-Forwarded-Proto). A Host field that is not a plain host name or
// address gives "", so links stay relative rather than carry it.
func (s *Server) baseURL(r *http.Request) string {
	host := r.Host
	if host == "" || len(host) > 255 || strings.IndexFunc(host, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c))
	}) >= 0 {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	} else if p := parseHostAddr(r.RemoteAddr); p.IsValid() && inPrefixes(p, s.trusted) &&
		strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		scheme = "https"
	}
	return scheme + "://" + host
}
