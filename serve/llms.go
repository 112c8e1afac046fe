package serve

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/template"
)

// llmsTxt is GET /llms.txt in the llms.txt format (an H1 title, a
// blockquote summary, details, then sections of link lists), with links
// made absolute with the configured public URL (relative without one).
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

// baseURL is the scheme, host and path prefix of absolute links: the
// configured public URL, or "" for relative links. Never the request's
// Host, which a client chooses and a shared cache may not key on.
func (s *Server) baseURL(*http.Request) string { return s.publicURL }

// ParsePublicURL checks a public URL for Options.PublicURL and returns it
// without a trailing "/": an absolute http or https URL with a host and
// no user, query or fragment. The empty string is valid (relative links).
func ParsePublicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an http or https URL such as https://kwdata.example.com (a path prefix is allowed; user, query and fragment are not)", raw)
	}
	if strings.ContainsAny(u.Host, "()[]<>\"\\ ") && !strings.HasPrefix(u.Host, "[") {
		return "", fmt.Errorf("%q has a host that is not a name or an address", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}
