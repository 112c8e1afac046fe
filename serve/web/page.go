package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/kwdata/kwdata/kw"
)

// PageCSP allows the page's own inline styles and this site's scripts
// (only the keyword page's /suggest.js, which asks /v1/suggest) and
// nothing else: no inline script, no external asset, forms only to this
// site.
const PageCSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// PageData is what every page template sees.
type PageData struct {
	Title       string
	Description string
	Base        string // scheme and host for the commands shown, e.g. "https://kwdata.example"
	Updated     string // data date of the index; empty while none is loaded
	JSONURL     string
	Form        FormData
	// Countries are those the served index holds keywords of (every
	// supported one while none is loaded); OtherCountries the rest.
	Countries      []kw.Country
	OtherCountries []kw.Country
	// Examples are keyword pages of the served index to try: they answer
	// with a real page, never a 404.
	Examples []ExampleLink
	// The view of the page's room: K the keyword page, G the intent page,
	// Err an error page, Acct the sign-up and account pages.
	K, G, Err, Acct any
	// X is the keyword explorer page's view.
	X any
}

// ExampleLink is one keyword to try on the home page.
type ExampleLink struct {
	Keyword, Country, URL, APIURL string
}

// FormData fills the search form.
type FormData struct {
	Q       string
	Country string // upper case
}

// NewPage starts the data of a page titled title, with the search form
// filled in as form.
func (s *Core) NewPage(r *http.Request, title string, form FormData) *PageData {
	d := &PageData{Title: title, Base: s.BaseURL(r), Form: form, Countries: kw.Countries()}
	if info, ok := s.Index.Info(); ok {
		d.Updated = info.DataDate
		all := CountriesWithDataFirst(info)
		n := 0
		for n < len(all) && info.Countries[all[n].Code] > 0 {
			n++
		}
		if n > 0 {
			d.Countries, d.OtherCountries = all[:n], all[n:]
		}
	}
	return d
}

// RenderPage executes a page template into a buffer first, so a template
// failure is still a clean 500 and never half a page.
func RenderPage(w http.ResponseWriter, r *http.Request, status int, name string, t *template.Template, d *PageData) error {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
		return fmt.Errorf("cannot render the %s page: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Content-Security-Policy", PageCSP)
	h.Set("Referrer-Policy", "same-origin")
	if name == "home" {
		h.Set("Cache-Control", "public, max-age=300")
	} else {
		h["Cache-Control"] = CacheControlPrivate // every view counts against the allowance, or shows an account
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
	return nil
}

//go:embed templates/layout.html
var layoutFS embed.FS

// layout is the frame of every page: head, header, search form, footer.
var layout = template.Must(template.ParseFS(layoutFS, "templates/layout.html"))

// ParsePages returns one template set per name, each the layout plus the
// "content" of templates/<name>.html in fsys: how every room that renders
// HTML shares the one layout.
func ParsePages(fsys fs.FS, names ...string) map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range names {
		t := template.Must(layout.Clone())
		out[name] = template.Must(t.ParseFS(fsys, "templates/"+name+".html"))
	}
	return out
}
