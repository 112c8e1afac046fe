package main

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/ingest/sample"
	"github.com/kwdata/kwdata/internal/testservers"
)

// markdownDocs lists the repository's Markdown documents, relative to its
// root: README.md, ARCHITECTURE.md and everything under docs/.
func markdownDocs(tb testing.TB) []string {
	tb.Helper()
	docs := []string{"README.md", "ARCHITECTURE.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(docs) < 6 {
		tb.Fatalf("found only %v", docs)
	}
	return docs
}

// TestDocsReadmeIsAMap: the README's first lines give the two commands of
// a fresh machine, it stays short, and it links to every reference
// document, each of which exists.
func TestDocsReadmeIsAMap(t *testing.T) {
	readme := readDoc(t, "README.md")
	lines := strings.Split(readme, "\n")
	if n := len(lines); n > 250 {
		t.Errorf("README.md has %d lines; it is a map of at most 250, and reference text goes to docs/", n)
	}
	head := strings.Join(lines[:min(8, len(lines))], "\n")
	for _, cmd := range []string{"make demo", "make test"} {
		if !strings.Contains(head, cmd) {
			t.Errorf("README.md's first lines do not give %q", cmd)
		}
	}
	for _, link := range []string{"docs/API.md", "docs/OPERATIONS.md", "docs/ANALYSTS.md", "docs/perf/", "ARCHITECTURE.md"} {
		if !strings.Contains(readme, "("+link) {
			t.Errorf("README.md does not link to %s", link)
		}
	}
	if n := strings.Count(readDoc(t, "ARCHITECTURE.md"), "\n"); n > 300 {
		t.Errorf("ARCHITECTURE.md has %d lines; it is a map, and measurements go to docs/perf/", n)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinksResolve: every relative link of the Markdown documents
// leads to a file or folder of the repository.
func TestDocsLinksResolve(t *testing.T) {
	for _, doc := range markdownDocs(t) {
		for _, m := range mdLink.FindAllStringSubmatch(readDoc(t, doc), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Join(repoRoot, filepath.Dir(doc), target)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", doc, m[1])
			}
		}
	}
}

// outsideRef matches a citation of the product brief the repository grew
// from, which whoever clones it cannot read.
var outsideRef = regexp.MustCompile(`\bSPEC\b|\bthe spec\b|\bthe spec's\b`)

// TestDocsCiteNothingOutside: no Go file, document or served text cites a
// document the repository does not hold; each states its rule, or points
// to the file of the repository that does.
func TestDocsCiteNothingOutside(t *testing.T) {
	found := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "demo-data") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".json", ".txt", ".service", ".sh", ".yaml":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found++
		for i, line := range strings.Split(string(b), "\n") {
			if outsideRef.MatchString(line) {
				t.Errorf("%s:%d cites a document outside the repository: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 100 {
		t.Fatalf("read only %d files", found)
	}
}

// openAPIDoc is the part of serve/web/openapi.json the docs tests read.
type openAPIDoc struct {
	Info struct {
		Description string `json:"description"`
		Contact     struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"contact"`
	} `json:"info"`
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}

func readOpenAPI(tb testing.TB) openAPIDoc {
	tb.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal([]byte(readDoc(tb, "serve/web/openapi.json")), &doc); err != nil {
		tb.Fatal(err)
	}
	if len(doc.Paths) < 10 {
		tb.Fatalf("the OpenAPI document has only %d paths", len(doc.Paths))
	}
	return doc
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// TestOpenAPIDescribesEveryOperation keeps what Spectral's spectral:oas
// ruleset asks of the document: info.contact, and a summary and a
// description on every operation.
func TestOpenAPIDescribesEveryOperation(t *testing.T) {
	doc := readOpenAPI(t)
	if doc.Info.Contact.Name == "" || !strings.HasPrefix(doc.Info.Contact.URL, "https://") {
		t.Errorf("info.contact is %+v; give it a name and an https URL", doc.Info.Contact)
	}
	ops := 0
	for path, item := range doc.Paths {
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			ops++
			var op struct{ Summary, Description string }
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(op.Summary) == "" || strings.TrimSpace(op.Description) == "" {
				t.Errorf("%s %s has no summary or no description", strings.ToUpper(method), path)
			}
		}
	}
	if ops < 20 {
		t.Fatalf("found only %d operations", ops)
	}
}

// routeRef matches a route as docs/API.md's route table writes it.
var routeRef = regexp.MustCompile("`(GET|POST|HEAD) (/[^ ?`]*)")

// TestDocsRoutes: the route table of docs/API.md names routes the OpenAPI
// document has, with their methods, and leaves out none of the API's
// (everything but the pages' own forms and assets).
func TestDocsRoutes(t *testing.T) {
	doc := readOpenAPI(t)
	table := section(t, readDoc(t, "docs/API.md"), "## The routes")
	documented := map[string]bool{}
	for _, m := range routeRef.FindAllStringSubmatch(table, -1) {
		route := m[1] + " " + m[2]
		documented[route] = true
		if raw, ok := doc.Paths[m[2]][strings.ToLower(m[1])]; !ok || raw == nil {
			t.Errorf("docs/API.md lists %s, which the OpenAPI document does not have", route)
		}
	}
	if len(documented) < 15 {
		t.Fatalf("docs/API.md's route table names only %d routes", len(documented))
	}
	for path, item := range doc.Paths {
		if strings.HasPrefix(path, "/account/") || path == "/register/verify" || path == "/suggest.js" || path == "/problems/{code}" {
			continue // a page's form or asset, described with its page
		}
		for method := range item {
			route := strings.ToUpper(method) + " " + path
			pageForm := method == "post" && !strings.HasPrefix(path, "/v1/") && path != "/mcp"
			if slices.Contains(httpMethods, method) && method != "head" && !pageForm && !documented[route] {
				t.Errorf("docs/API.md's route table leaves out %s", route)
			}
		}
	}
}

// allowance matches the allowances as the documents state them.
var (
	dailyRef   = regexp.MustCompile(`(\d+) lookups per UTC day`)
	monthlyRef = regexp.MustCompile(`(\d+) lookups per UTC (?:calendar )?month`)
	countRef   = regexp.MustCompile(`(\d+)\+? countries`)
)

// TestDocsCountsAgree: docs/API.md, the OpenAPI document and llms.txt give
// the same allowances, the served RateLimit-Policy of an anonymous caller
// is the documented one, and no document claims a number of countries the
// server does not serve.
func TestDocsCountsAgree(t *testing.T) {
	api := section(t, readDoc(t, "docs/API.md"), "## Limits")
	day, month := dailyRef.FindStringSubmatch(api), monthlyRef.FindStringSubmatch(api)
	if day == nil || month == nil {
		t.Fatalf("docs/API.md's Limits section states no daily or monthly allowance:\n%s", api)
	}
	for name, text := range map[string]string{"serve/web/openapi.json": readOpenAPI(t).Info.Description, "serve/pages/llms.txt": readDoc(t, "serve/pages/llms.txt")} {
		if d := dailyRef.FindStringSubmatch(text); d == nil || d[1] != day[1] {
			t.Errorf("%s gives the anonymous allowance as %v, docs/API.md as %s a day", name, d, day[1])
		}
		if m := monthlyRef.FindStringSubmatch(text); m == nil || m[1] != month[1] {
			t.Errorf("%s gives the registered allowance as %v, docs/API.md as %s a month", name, m, month[1])
		}
	}

	base := startServer(t, t.TempDir())
	resp, err := http.Get(base + "/v1/countries")
	if err != nil {
		t.Fatal(err)
	}
	var countries struct{ Countries []json.RawMessage }
	err = json.NewDecoder(resp.Body).Decode(&countries)
	resp.Body.Close()
	if err != nil || len(countries.Countries) == 0 {
		t.Fatalf("GET /v1/countries: %v, %d countries", err, len(countries.Countries))
	}
	resp, err = http.Get(base + "/llms.txt")
	if err != nil {
		t.Fatal(err)
	}
	llms, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for name, text := range map[string]string{"served /llms.txt": string(llms), "serve/web/openapi.json": readDoc(t, "serve/web/openapi.json"), "docs/API.md": readDoc(t, "docs/API.md"), "README.md": readDoc(t, "README.md")} {
		for _, m := range countRef.FindAllStringSubmatch(text, -1) {
			t.Errorf("%s claims %q; the server serves %d supported countries, and the served build's are listed by GET /v1/countries", name, m[0], len(countries.Countries))
		}
	}
}

// TestDocsPageScript: the pages' script policy is the one docs/API.md
// states: the server sends script-src 'self', serves /suggest.js, and no
// document says the pages carry no script.
func TestDocsPageScript(t *testing.T) {
	base := startServer(t, t.TempDir())
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("the home page's Content-Security-Policy is %q", csp)
	}
	resp, err = http.Get(base + "/suggest.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /suggest.js answers %d", resp.StatusCode)
	}
	api := strings.Join(strings.Fields(readDoc(t, "docs/API.md")), " ")
	if !strings.Contains(api, "`/suggest.js`") || !strings.Contains(api, "`script-src 'self'`") {
		t.Error("docs/API.md does not say that the keyword page loads /suggest.js under script-src 'self'")
	}
	noScript := regexp.MustCompile(`(?i)(carry|load|run)s? no script at all|allows none`)
	for _, doc := range markdownDocs(t) {
		if m := noScript.FindString(strings.Join(strings.Fields(readDoc(t, doc)), " ")); m != "" {
			t.Errorf("%s says %q, but the keyword page loads /suggest.js", doc, m)
		}
	}
}

// TestDocsServiceUnitsLoadSecrets: both systemd units load
// /etc/kwdata/kwdata.env, which docs/OPERATIONS.md tells operators to put
// the secrets in (the SMTP, Stripe, Redis and AWS ones for the server).
func TestDocsServiceUnitsLoadSecrets(t *testing.T) {
	envFile := regexp.MustCompile(`(?m)^EnvironmentFile=-?/etc/kwdata/kwdata\.env$`)
	for _, unit := range []string{"docs/kwdata-pipeline.service", "docs/kwdata-serve.service"} {
		if !envFile.MatchString(readDoc(t, unit)) {
			t.Errorf("%s has no EnvironmentFile=/etc/kwdata/kwdata.env line", unit)
		}
	}
}

// sqlBlock matches a fenced SQL block of a Markdown document.
var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestAnalystsRecipes runs every SQL block of docs/ANALYSTS.md, as written,
// with DuckDB, in a folder holding what `make demo` leaves (demo-data/,
// built by the demo's own code with its defaults), and checks that each
// query answers rows. It needs node and DuckDB's Node package, as
// TestDuckDBReadsTheLake does.
func TestAnalystsRecipes(t *testing.T) {
	mods := os.Getenv("KWDATA_DUCKDB")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		testservers.SkipForTool(t, "DuckDB", "npm install --prefix DIR @duckdb/node-api@1.5.6-r.1, then KWDATA_DUCKDB=DIR (Node.js needed; .ci/run does both)")
	}
	var blocks []string
	for _, m := range sqlBlock.FindAllStringSubmatch(readDoc(t, "docs/ANALYSTS.md"), -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) < 2 {
		t.Fatalf("docs/ANALYSTS.md has %d sql blocks", len(blocks))
	}

	// What make demo leaves: the demo, with its defaults, in demo-data/.
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	m, _, _ := testMain(t)
	go func() {
		done <- m.demo(ctx, demoOptions{data: filepath.Join(dir, "demo-data"), keywords: sample.DefaultKeywords,
			countries: sample.DefaultCountries(), serve: serveConfig{listener: ln}})
	}()
	ready := "http://" + ln.Addr().String() + "/readyz"
	testservers.WaitFor(t, 10*time.Minute, "the demo to be ready", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the demo stopped before serving: %v", err)
		default:
		}
		resp, err := http.Get(ready)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo: %v", err)
	}

	sqlFile := filepath.Join(dir, "recipes.sql")
	if err := os.WriteFile(sqlFile, []byte(strings.Join(blocks, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/duckdb-recipes.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// Node resolves packages from the script's folder.
	local := filepath.Join(mods, "kwdata-duckdb-recipes.mjs")
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(local)
	cmd := exec.Command(node, local, sqlFile)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the recipes of docs/ANALYSTS.md fail in DuckDB: %v\n%s", err, out)
	}
	var results [][]map[string]any
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("duckdb printed %s: %v", out, err)
	}
	// The statements as the script splits them: comment-only ones dropped.
	var stmts []string
	for _, stmt := range regexp.MustCompile(`;[ \t]*(?:\n|$)`).Split(strings.Join(blocks, "\n"), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)--.*$`).ReplaceAllString(stmt, "")) != "" {
			stmts = append(stmts, stmt)
		}
	}
	if len(results) != len(stmts) {
		t.Fatalf("DuckDB ran %d statements, docs/ANALYSTS.md has %d", len(results), len(stmts))
	}
	queries := 0
	for i, stmt := range stmts {
		if !strings.Contains(strings.ToUpper(stmt), "SELECT") || strings.Contains(strings.ToUpper(stmt), "CREATE VIEW") {
			continue
		}
		queries++
		if len(results[i]) == 0 {
			t.Errorf("this query of docs/ANALYSTS.md answers no rows on the demo's lake:\n%s", strings.TrimSpace(stmt))
		}
	}
	if queries < 3 {
		t.Fatalf("found only %d queries", queries)
	}
}
