package pipelines

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

const fullConfig = `data: ./data
countries: [us, DE]
schedule: "0 3 * * *"
timezone: Europe/Berlin
retention: { keep_builds: 5, keep_days: 40 }
publish: { to: s3://kwdata-builds/prod/index, endpoint: "http://minio:9000" }
keywords:
  us: seeds/us.txt
  de: /abs/seeds/de.txt
files:
  us: { planner_csv: [exports/us.csv], serp_jsonl: [serps/us.jsonl], usd_rate: { eur: 1.08 } }
googleads:
  endpoint: https://googleads.googleapis.com
  api_version: v22
  customer_id: "123-456-7890"
  login_customer_id: "9876543210"
  token_url: https://oauth2.googleapis.com/token
  client_id: ${GOOGLE_ADS_CLIENT_ID}
  client_secret: ${GOOGLE_ADS_CLIENT_SECRET}
  refresh_token: ${GOOGLE_ADS_REFRESH_TOKEN}
  developer_token: ${GOOGLE_ADS_DEVELOPER_TOKEN}
  requests_per_second: 1
  usd_rate: 1.08
  expand_ideas: 50
dataforseo:
  endpoint: https://api.dataforseo.com
  login: ${DATAFORSEO_LOGIN}
  password: ${DATAFORSEO_PASSWORD}
  max_serps_per_run: 10000
  max_age_days: 30
`

var fullEnv = map[string]string{
	"GOOGLE_ADS_CLIENT_ID":     "client-id",
	"GOOGLE_ADS_CLIENT_SECRET": "se: cret # not a comment",
	"GOOGLE_ADS_REFRESH_TOKEN": "~",
	"DATAFORSEO_LOGIN":         "me@example.com",
	"DATAFORSEO_PASSWORD":      "p$ss${",
}

// writeConfig writes a config file into a fresh folder and returns its path.
func writeConfig(tb testing.TB, content string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "kwdata.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigFull(t *testing.T) {
	path := writeConfig(t, fullConfig)
	dir := filepath.Dir(path)
	cfg, err := LoadConfig(path, envOf(fullEnv))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != path || cfg.Data != filepath.Join(dir, "data") {
		t.Errorf("path %s, data %s; want %s and %s/data", cfg.Path, cfg.Data, path, dir)
	}
	if !slices.Equal(cfg.Countries, []string{"us", "de"}) {
		t.Errorf("countries = %v", cfg.Countries)
	}
	if cfg.Location == nil || cfg.Location.String() != "Europe/Berlin" {
		t.Errorf("location = %v", cfg.Location)
	}
	if cfg.Retention != (Retention{KeepBuilds: 5, KeepDays: 40, MaxAgeDays: 30}) {
		t.Errorf("retention = %+v", cfg.Retention)
	}
	if cfg.Publish != (Publish{To: "s3://kwdata-builds/prod/index", Endpoint: "http://minio:9000"}) {
		t.Errorf("publish = %+v", cfg.Publish)
	}
	if cfg.Keywords["us"] != filepath.Join(dir, "seeds/us.txt") || cfg.Keywords["de"] != "/abs/seeds/de.txt" {
		t.Errorf("keywords = %v", cfg.Keywords)
	}
	us := cfg.Files["us"]
	if !slices.Equal(us.PlannerCSV, []string{filepath.Join(dir, "exports/us.csv")}) || !slices.Equal(us.SERPJSONL, []string{filepath.Join(dir, "serps/us.jsonl")}) ||
		!maps.Equal(us.USDRate, map[string]float64{"EUR": 1.08}) {
		t.Errorf("files = %+v", cfg.Files)
	}
	g := cfg.GoogleAds
	if g == nil || g.ClientID != "client-id" || g.ClientSecret != fullEnv["GOOGLE_ADS_CLIENT_SECRET"] || g.RefreshToken != "~" ||
		g.DeveloperToken != "" || g.CustomerID != "123-456-7890" || g.RequestsPerSecond != 1 || g.ExpandIdeas != 50 || g.USDRate != 1.08 {
		t.Errorf("googleads = %+v", g)
	}
	d := cfg.DataForSEO
	if d == nil || d.Login != "me@example.com" || d.Password != "p$ss${" || d.MaxSERPsPerRun != 10000 || d.MaxAgeDays != 30 {
		t.Errorf("dataforseo = %+v", d)
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	path := writeConfig(t, "data: /srv/kwdata\ncountries: [gb]\nfiles:\n  gb: { planner_csv: [gb.csv] }\ngoogleads:\n  customer_id: \"1234567890\"\n  client_id: a\n  client_secret: b\n  refresh_token: c\ndataforseo: { login: x, password: y }\n")
	cfg, err := LoadConfig(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "/srv/kwdata" || cfg.Timezone != "UTC" || cfg.Schedule != "" {
		t.Errorf("cfg = %+v", cfg)
	}
	if cfg.Retention != (Retention{KeepBuilds: DefaultKeepBuilds, KeepDays: DefaultKeepDays, MaxAgeDays: kw.DefaultSERPMaxAgeDays}) {
		t.Errorf("retention = %+v, want the defaults", cfg.Retention)
	}
	// The sections come back with the clients' own defaults (their
	// values are checked where they live: ingest, googleads, dataforseo).
	if g := cfg.GoogleAds; g.Endpoint == "" || g.APIVersion == "" || g.TokenURL == "" || g.RequestsPerSecond != 1 || *g != g.WithDefaults() {
		t.Errorf("googleads defaults = %+v", g)
	}
	if d := cfg.DataForSEO; d.Endpoint == "" || d.MaxSERPsPerRun <= 0 || d.MaxAgeDays != kw.DefaultSERPMaxAgeDays || *d != d.WithDefaults() {
		t.Errorf("dataforseo defaults = %+v", d)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	base := "data: ./data\ncountries: [us]\nfiles:\n  us: { planner_csv: [us.csv] }\n"
	tests := []struct {
		name    string
		content string
		env     map[string]string
		want    []string // substrings of the error
	}{
		{"unknown key", base + "retension: { keep_days: 3 }\n", nil, []string{"retension (line 5) is not a known key; write retention"}},
		{"unknown nested key", base + "dataforseo: { login: a, password: b, max_serps: 3 }\n", nil, []string{"max_serps"}},
		{"bad schedule", base + "schedule: \"0 3 * *\"\n", nil, []string{"schedule:", "5 fields"}},
		{"bad descriptor", base + "schedule: \"@sometimes\"\n", nil, []string{"schedule:", "descriptor"}},
		{"bad timezone", base + "timezone: Mars/Olympus\n", nil, []string{"timezone:", "Mars/Olympus", "IANA"}},
		{"unsupported country", "data: d\ncountries: [us, xx]\nfiles: { us: { planner_csv: [a] } }\n", nil, []string{"countries[1]", `"xx"`, "not a supported country"}},
		{"country twice", "data: d\ncountries: [us, US]\nfiles: { us: { planner_csv: [a] } }\n", nil, []string{"countries[1]", "twice"}},
		{"no data", "countries: [us]\nfiles: { us: { planner_csv: [a] } }\n", nil, []string{"data is empty", "data: ./data"}},
		{"no countries", "data: d\n", nil, []string{"countries is empty"}},
		{"no source", "data: d\ncountries: [us, de]\nfiles: { us: { planner_csv: [a] } }\n", nil, []string{"de has no keyword source"}},
		{"keywords without googleads", "data: d\ncountries: [de]\nkeywords: { de: de.txt }\n", nil, []string{"de has no keyword source"}},
		{"files for another country", base + "keywords: { fr: fr.txt }\n", nil, []string{"keywords.fr", "not in countries"}},
		{"unset env", base + "dataforseo:\n  login: ${DFS_LOGIN}\n  password: ${DFS_PASSWORD}\n", map[string]string{"DFS_LOGIN": "me"},
			[]string{"dataforseo.password", "DFS_PASSWORD is not set"}},
		{"unset env inside a value", base + "dataforseo: { login: me, password: \"x-${DFS_PASSWORD}\" }\n", nil,
			[]string{"dataforseo.password", "DFS_PASSWORD is not set"}},
		{"unset env in a path", "data: ${KWDATA_HOME}/data\ncountries: [us]\nfiles: { us: { planner_csv: [a] } }\n", nil,
			[]string{"data: environment variable KWDATA_HOME is not set"}},
		{"unterminated reference", base + "dataforseo: { login: me, password: \"${OOPS\" }\n", nil, []string{"dataforseo.password", "closing }"}},
		{"bad reference", base + "dataforseo: { login: me, password: \"${1X}\" }\n", nil, []string{"dataforseo.password", "not a variable reference"}},
		{"googleads incomplete", base + "googleads: { customer_id: \"12\" }\n", nil,
			[]string{"googleads.customer_id", "10 digits", "googleads.client_id is empty", "googleads.refresh_token is empty"}},
		{"bad endpoint", base + "dataforseo: { login: a, password: b, endpoint: \"ftp://x\" }\n", nil, []string{"dataforseo.endpoint", "http(s) URL"}},
		{"negative retention", base + "retention: { keep_builds: -1 }\n", nil, []string{"retention.keep_builds", "at least 2"}},
		{"one build", base + "retention: { keep_builds: 1 }\n", nil, []string{"retention.keep_builds", "at least 2"}},
		{"no days", base + "retention: { keep_days: -5 }\n", nil, []string{"retention.keep_days", "at least 1"}},
		{"keep_days below max_age_days", base + "retention: { keep_days: 20 }\ndataforseo: { login: a, password: b, max_age_days: 30 }\n", nil,
			[]string{"retention.keep_days is 20", "max_age_days is 30", "keep_days: 30 or more"}},
		{"max_age_days above default keep_days", base + "dataforseo: { login: a, password: b, max_age_days: 60 }\n", nil,
			[]string{"retention.keep_days is 35", "max_age_days is 60"}},
		{"negative expansion", base + "googleads: { customer_id: \"1234567890\", client_id: a, client_secret: b, refresh_token: c, expand_ideas: -1 }\n", nil,
			[]string{"googleads.expand_ideas is -1"}},
		{"negative usd_rate", base + "googleads: { customer_id: \"1234567890\", client_id: a, client_secret: b, refresh_token: c, usd_rate: -1.08 }\n", nil,
			[]string{"googleads.usd_rate is -1.08", "1.08 for EUR"}},
		{"bad file rates", "data: d\ncountries: [us]\nfiles: { us: { planner_csv: [a], usd_rate: { euro: 1.08, GBP: 0, usd: 1.1 } } }\n", nil,
			[]string{`files.us.usd_rate: "euro" is not a currency code`, "files.us.usd_rate.GBP is 0", "files.us.usd_rate.usd is 1.1; USD needs no rate"}},
		{"file rate twice", "data: d\ncountries: [us]\nfiles: { us: { planner_csv: [a], usd_rate: { eur: 1.08, EUR: 1.09 } } }\n", nil,
			[]string{"files.us.usd_rate: EUR is given twice"}},
		{"publish not s3", base + "publish: { to: /mnt/builds }\n", nil, []string{`publish.to is "/mnt/builds"`, "s3://BUCKET/PREFIX"}},
		{"publish no bucket", base + "publish: { to: \"s3:///x\" }\n", nil, []string{"publish.to", "s3://BUCKET/PREFIX"}},
		{"publish endpoint alone", base + "publish: { endpoint: \"http://minio:9000\" }\n", nil, []string{"publish.to is empty"}},
		{"publish bad endpoint", base + "publish: { to: s3://b, endpoint: minio:9000 }\n", nil, []string{"publish.endpoint", "http://minio:9000"}},
		{"publish unknown key", base + "publish: { url: s3://b }\n", nil, []string{"publish.url (line 5) is not a known key"}},
		{"wrong type", base + "retention: { keep_days: lots }\n", nil, []string{"line 5", "lots"}},
		{"empty file", "\n# nothing\n", nil, []string{"empty"}},
		{"two documents", base + "---\ndata: other\n", nil, []string{"more than one YAML document"}},
		{"not yaml", "data: [unclosed\n", nil, []string{"line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.content)
			_, err := LoadConfig(path, envOf(tt.env))
			if err == nil {
				t.Fatal("LoadConfig accepted the file")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q spans lines", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

// TestLoadConfigData replaces the file's data folder with the one a command
// line gives, resolved against the working directory, and then needs no
// data key in the file.
func TestLoadConfigData(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rest := "countries: [us]\nfiles: { us: { planner_csv: [a] } }\n"
	for _, tc := range []struct {
		name, content, data, want string
	}{
		{"no data key", rest, "elsewhere", filepath.Join(wd, "elsewhere")},
		{"flag wins", "data: ./data\n" + rest, "/srv/other", "/srv/other"},
		{"unset variable in the file", "data: ${KWDATA_HOME}/data\n" + rest, "/srv/other", "/srv/other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfigData(writeConfig(t, tc.content), nil, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Data != tc.want {
				t.Errorf("data %s, want %s", cfg.Data, tc.want)
			}
		})
	}
	if _, err := LoadConfigData(writeConfig(t, rest), nil, ""); err == nil || !strings.Contains(err.Error(), "data is empty") {
		t.Errorf("no data key and no flag: err = %v, want data is empty", err)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("err = %v, want one naming the file", err)
	}
}

func TestExpandEnv(t *testing.T) {
	env := envOf(map[string]string{"A": "1", "B_2": "two", "EMPTY": ""})
	tests := []struct {
		in, want string
		unset    []string
		err      bool
	}{
		{"plain", "plain", nil, false},
		{"${A}", "1", nil, false},
		{"x${A}y${B_2}z", "x1ytwoz", nil, false},
		{"$A and $", "$A and $", nil, false},
		{"$${A}", "${A}", nil, false},
		{"${EMPTY}${MISSING}", "", []string{"EMPTY", "MISSING"}, false},
		{"${A", "", nil, true},
		{"${}", "", nil, true},
		{"${A-B}", "", nil, true},
	}
	for _, tt := range tests {
		got, unset, err := expandEnv(tt.in, env)
		if (err != nil) != tt.err || got != tt.want || !slices.Equal(unset, tt.unset) {
			t.Errorf("expandEnv(%q) = %q, %v, %v; want %q, %v, err %v", tt.in, got, unset, err, tt.want, tt.unset, tt.err)
		}
	}
}

func FuzzExpandEnv(f *testing.F) {
	for _, s := range []string{"", "${A}", "$${A}", "${A", "a$b${C}d", "${}", "$$$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, unset, err := expandEnv(s, func(string) string { return "" })
		if err != nil {
			return
		}
		if !strings.Contains(s, "${") && out != s {
			t.Fatalf("expandEnv(%q) = %q; a string without references must not change", s, out)
		}
		if len(out) > len(s) {
			t.Fatalf("expandEnv(%q) = %q grew with empty variables", s, out)
		}
		for _, name := range unset {
			if !validEnvName(name) {
				t.Fatalf("unset lists invalid name %q", name)
			}
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte("data: d\ncountries: [us]\nfiles: { us: { planner_csv: [a] } }\n"))
	f.Add([]byte("countries: {us: 1}\n"))
	f.Add([]byte("data: &a [*a]\n"))
	f.Add([]byte("googleads: ~\ndataforseo: []\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := parseConfig(b, "/etc/kwdata", envOf(fullEnv), "")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if !filepath.IsAbs(cfg.Data) || len(cfg.Countries) == 0 || cfg.Location == nil {
			t.Fatalf("accepted config without absolute data, countries or location: %+v", cfg)
		}
		if cfg.Retention.KeepBuilds < 1 || cfg.Retention.KeepDays < 1 {
			t.Fatalf("retention without defaults: %+v", cfg.Retention)
		}
	})
}

// TestLoadConfigReportsEveryProblem: unknown keys and values of the wrong
// kind are reported with every other problem of the file, each naming its
// key, its line and what to write, in the operator's words: never a Go
// type name or a decoder's message.
func TestLoadConfigReportsEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    []string
	}{
		{"typo hides nothing",
			"data: ./data\ncountries: [us, xx]\nschedul: \"0 3 * * *\"\ntimezone: Mars/Olympus\nretention: { keep_builds: 1 }\nfiles:\n  us: { planner_csv: [us.csv] }\n",
			[]string{"schedul (line 3) is not a known key; write schedule", `countries[1]: "xx" is not a supported country`,
				"timezone: \"Mars/Olympus\"", "retention.keep_builds is 1"}},
		{"unknown nested key without a near name",
			"data: d\ncountries: [us]\nfiles: { us: { planner_csv: [a] } }\ndataforseo: { login: a, password: b, budget: 3 }\n",
			[]string{"dataforseo.budget (line 4) is not a known key; remove it, or write one of the keys of dataforseo: endpoint, login, password, max_serps_per_run, max_age_days"}},
		{"wrong kinds",
			"data: [a, b]\ncountries: us\nretention: { keep_days: lots }\nfiles: { us: { planner_csv: [a] } }\ndataforseo: { login: a, password: b, max_serps_per_run: \"${BUDGET}\" }\n",
			[]string{`data (line 1) is a list, not a single value; write data: ./data`,
				`retention.keep_days (line 3) is "lots", not a whole number; write keep_days: 35`,
				`dataforseo.max_serps_per_run (line 5) is "${BUDGET}", not a whole number (numbers cannot come from variables)`}},
		{"a section where a value belongs",
			"data: d\ncountries: [us]\nfiles: { us: { planner_csv: [a] } }\ngoogleads: { customer_id: { id: 1 }, client_id: a, client_secret: b, refresh_token: c }\n",
			[]string{"googleads.customer_id (line 4) is a section of key: value settings, not a single value",
				"googleads.customer_id is empty"}},
		{"not a section", "- data\n- countries\n", []string{"the file is not a list of key: value settings (line 1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.content), nil)
			if err == nil {
				t.Fatal("LoadConfig accepted the file")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if w == "googleads.customer_id is empty" {
					if strings.Contains(msg, w) {
						t.Errorf("error %q reports a key of the wrong kind twice", msg)
					}
					continue
				}
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			for _, internal := range []string{"pipelines.", "cannot unmarshal", "not found in type", "!!", "[]string", " int", "float64", "struct"} {
				if strings.Contains(msg, internal) {
					t.Errorf("error %q speaks of Go internals (%q)", msg, internal)
				}
			}
		})
	}
}

// TestLoadConfigSinglePath: one path where a list of paths is expected is
// a list of one.
func TestLoadConfigSinglePath(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "data: d\ncountries: us\nfiles:\n  us: { planner_csv: exports/us.csv, serp_jsonl: serps.jsonl }\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Countries) != 1 || cfg.Countries[0] != "us" {
		t.Errorf("countries = %q, want [us]", cfg.Countries)
	}
	f := cfg.Files["us"]
	if len(f.PlannerCSV) != 1 || filepath.Base(f.PlannerCSV[0]) != "us.csv" || len(f.SERPJSONL) != 1 || filepath.Base(f.SERPJSONL[0]) != "serps.jsonl" {
		t.Errorf("files.us = %+v, want one planner export and one SERP file", f)
	}
}
