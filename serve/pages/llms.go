package pages

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/http"
	"strconv"
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
func (s *Pages) handleLLMs(w http.ResponseWriter, r *http.Request) error {
	var buf bytes.Buffer
	if err := llmsTmpl.Execute(&buf, struct{ Base string }{s.BaseURL(r)}); err != nil {
		return fmt.Errorf("cannot render llms.txt: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
	return nil
}
