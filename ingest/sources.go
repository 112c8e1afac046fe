package ingest

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/ingest/dataforseo"
	"github.com/kwdata/kwdata/ingest/googleads"
	"github.com/kwdata/kwdata/kw"
)

// Sources are where a run's ingest takes each country's keywords and SERPs
// from: export files when Files names them, else keyword metrics from the
// Google Ads API for the keywords in Keywords, and SERPs from DataForSEO.
// The keywords, files, googleads and dataforseo sections of kwdata's
// configuration file decode straight into it; Check fills its defaults and
// checks it, and Run ingests it for a date.
type Sources struct {
	// Keywords maps a country to a file with its keyword universe for the
	// API sources: one keyword a line; blank lines and lines starting
	// with # are skipped. Lower-case codes after Check.
	Keywords map[string]string `yaml:"keywords"`
	// Files maps a country to export files to ingest instead of the APIs:
	// for operators without API access, and for tests. Lower-case codes
	// after Check.
	Files map[string]FileSources `yaml:"files"`
	// GoogleAds is the Google Ads API account; nil when the section is
	// absent.
	GoogleAds *googleads.Config `yaml:"googleads"`
	// DataForSEO is the DataForSEO account and the SERP refresh budget
	// (MaxSERPsPerRun, shared by all countries of a run); nil when the
	// section is absent.
	DataForSEO *dataforseo.Config `yaml:"dataforseo"`
}

// FileSources are the input files of one country.
type FileSources struct {
	// PlannerCSV are Keyword Planner exports (UTF-16, tab separated).
	PlannerCSV []string `yaml:"planner_csv"`
	// SERPJSONL are SERP JSON Lines files.
	SERPJSONL []string `yaml:"serp_jsonl"`
	// USDRate maps a currency code to its value in USD per unit
	// ({EUR: 1.08}), for planner exports in another currency than USD;
	// the configuration form of `kwdata ingest --usd-rate EUR=1.08`. Codes
	// are upper case after Check. Default none: such an export is refused.
	USDRate map[string]float64 `yaml:"usd_rate"`
}

// SERPMaxAgeDays is the age after which a keyword's SERP no longer counts
// for the similarity stage: dataforseo.max_age_days when the section is
// present, else kw.DefaultSERPMaxAgeDays.
func (s *Sources) SERPMaxAgeDays() int {
	if s.DataForSEO != nil && s.DataForSEO.MaxAgeDays > 0 {
		return s.DataForSEO.MaxAgeDays
	}
	return kw.DefaultSERPMaxAgeDays
}

// serpsFromAPI reports whether the SERPs of cc (lower case) come from
// DataForSEO.
func (s *Sources) serpsFromAPI(cc string) bool {
	return s.DataForSEO != nil && len(s.Files[cc].SERPJSONL) == 0
}

// Check fills in the defaults of s, resolves its relative paths against
// dir, and returns every problem it finds, each naming its key in the
// configuration file and what to write instead. countries are the run's
// countries, lower case; an entry for another country is a problem, and so
// is a country without a keyword source.
//
// unset tells Check whether a key's value came from environment variables
// that are not set. The caller reports those itself, naming the variables,
// so Check does not also call such a key empty; Check asks about every key
// that needs a value, and about the keys that may stay empty with optional
// set, which the caller then does not report at all.
func (s *Sources) Check(dir string, countries []string, unset func(key string, optional bool) bool) []string {
	c := &checker{dir: dir, countries: countries, unset: unset}
	s.Keywords = c.keywords(s.Keywords)
	s.Files = c.files(s.Files)
	if s.GoogleAds != nil {
		c.googleAds(s.GoogleAds)
	}
	if s.DataForSEO != nil {
		c.dataForSEO(s.DataForSEO)
	}
	// A country with no keyword source would ingest nothing and fail
	// every night; say so now.
	for _, code := range countries {
		hasFiles := len(s.Files[code].PlannerCSV) > 0
		hasAPI := s.Keywords[code] != "" && s.GoogleAds != nil
		if !hasFiles && !hasAPI {
			c.addf("countries: %s has no keyword source; add files.%s.planner_csv, or keywords.%s together with a googleads section", code, code, code)
		}
	}
	return c.problems
}

// checker collects the problems of one Check.
type checker struct {
	dir       string
	countries []string
	unset     func(key string, optional bool) bool
	problems  []string
}

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// required reports an empty key that needs a value, unless the value came
// from an unset variable, which the caller reports.
func (c *checker) required(key, value, example string) {
	if c.unset(key, false) || value != "" {
		return
	}
	c.addf("%s is empty; write e.g. %s: %s", key, key, example)
}

// resolve makes a path given in the file absolute.
func (c *checker) resolve(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(c.dir, path)
}

// countryKey checks a per-country map key and returns it lower case.
func (c *checker) countryKey(section, key string) (string, bool) {
	country, ok := kw.LookupCountry(key)
	if !ok {
		c.addf("%s.%s: %q is not a supported country; write an ISO 3166-1 alpha-2 code", section, key, key)
		return "", false
	}
	code := strings.ToLower(country.Code)
	if !slices.Contains(c.countries, code) {
		c.addf("%s.%s: %s is not in countries; add it to countries or remove this entry", section, key, code)
		return "", false
	}
	return code, true
}

func (c *checker) keywords(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for _, key := range slices.Sorted(maps.Keys(in)) {
		code, ok := c.countryKey("keywords", key)
		if !ok {
			continue
		}
		c.required("keywords."+key, in[key], "seeds/"+code+".txt")
		out[code] = c.resolve(in[key])
	}
	return out
}

func (c *checker) files(in map[string]FileSources) map[string]FileSources {
	out := make(map[string]FileSources, len(in))
	for _, key := range slices.Sorted(maps.Keys(in)) {
		code, ok := c.countryKey("files", key)
		if !ok {
			continue
		}
		fs := in[key]
		for i, name := range fs.PlannerCSV {
			c.required(fmt.Sprintf("files.%s.planner_csv[%d]", key, i), name, "exports/"+code+".csv")
			fs.PlannerCSV[i] = c.resolve(name)
		}
		for i, name := range fs.SERPJSONL {
			c.required(fmt.Sprintf("files.%s.serp_jsonl[%d]", key, i), name, "serps/"+code+".jsonl")
			fs.SERPJSONL[i] = c.resolve(name)
		}
		fs.USDRate = c.usdRates("files."+key+".usd_rate", fs.USDRate)
		out[code] = fs
	}
	return out
}

func (c *checker) googleAds(g *googleads.Config) {
	// Negative numbers are checked before WithDefaults, which would take
	// them for unset.
	if g.RequestsPerSecond < 0 || g.RequestsPerSecond > 100 {
		c.addf("googleads.requests_per_second is %v; write a positive number such as %d", g.RequestsPerSecond, googleads.DefaultRequestsPerSecond)
	}
	*g = g.WithDefaults()
	c.checkURL("googleads.endpoint", g.Endpoint)
	c.checkURL("googleads.token_url", g.TokenURL)
	if !strings.HasPrefix(g.APIVersion, "v") {
		c.addf("googleads.api_version: %q is not a version; write e.g. %s", g.APIVersion, googleads.DefaultAPIVersion)
	}
	c.required("googleads.customer_id", g.CustomerID, `"1234567890"`)
	c.checkCustomerID("googleads.customer_id", g.CustomerID)
	c.unset("googleads.login_customer_id", true)
	c.checkCustomerID("googleads.login_customer_id", g.LoginCustomerID)
	c.required("googleads.client_id", g.ClientID, "${GOOGLE_ADS_CLIENT_ID}")
	c.required("googleads.client_secret", g.ClientSecret, "${GOOGLE_ADS_CLIENT_SECRET}")
	c.required("googleads.refresh_token", g.RefreshToken, "${GOOGLE_ADS_REFRESH_TOKEN}")
	c.unset("googleads.developer_token", true)
	if !(g.USDRate >= 0) || math.IsInf(g.USDRate, 0) {
		c.addf("googleads.usd_rate is %v; write the USD value of one unit of the account's currency, e.g. 1.08 for EUR, or leave it out for a USD account", g.USDRate)
	}
	if g.ExpandIdeas < 0 {
		c.addf("googleads.expand_ideas is %d; write the most new keywords a run may add per country, or 0 for none", g.ExpandIdeas)
	}
}

func (c *checker) dataForSEO(d *dataforseo.Config) {
	if d.MaxSERPsPerRun < 0 {
		c.addf("dataforseo.max_serps_per_run is %d; write a positive budget such as %d", d.MaxSERPsPerRun, dataforseo.DefaultMaxSERPsPerRun)
	}
	if d.MaxAgeDays < 0 {
		c.addf("dataforseo.max_age_days is %d; write a positive number of days such as %d", d.MaxAgeDays, kw.DefaultSERPMaxAgeDays)
	}
	*d = d.WithDefaults()
	c.checkURL("dataforseo.endpoint", d.Endpoint)
	c.required("dataforseo.login", d.Login, "${DATAFORSEO_LOGIN}")
	c.required("dataforseo.password", d.Password, "${DATAFORSEO_PASSWORD}")
}

// usdRates checks a currency → USD rate map and returns it with upper-case
// codes, reporting problems under key.
func (c *checker) usdRates(key string, rates map[string]float64) map[string]float64 {
	if len(rates) == 0 {
		return nil
	}
	out := make(map[string]float64, len(rates))
	for _, cur := range slices.Sorted(maps.Keys(rates)) {
		rate, code := rates[cur], strings.ToUpper(strings.TrimSpace(cur))
		switch _, dup := out[code]; {
		case len(code) != 3 || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
			c.addf("%s: %q is not a currency code; write an ISO 4217 code such as EUR: 1.08", key, cur)
		case dup:
			c.addf("%s: %s is given twice; give each currency once", key, code)
		case !(rate > 0) || math.IsInf(rate, 0):
			c.addf("%s.%s is %v; write the USD value of one %s, e.g. 1.08", key, cur, rate, code)
		case code == "USD" && rate != 1:
			c.addf("%s.%s is %v; USD needs no rate, remove it", key, cur, rate)
		}
		out[code] = rate
	}
	return out
}

func (c *checker) checkURL(key, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.addf("%s: %q is not an http(s) URL; write e.g. https://host", key, raw)
	}
}

func (c *checker) checkCustomerID(key, id string) {
	digits := strings.ReplaceAll(id, "-", "")
	if id == "" {
		return
	}
	if _, err := strconv.ParseUint(digits, 10, 64); err != nil || len(digits) != 10 {
		c.addf("%s: %q is not a customer id; write the 10 digits, quoted, e.g. \"1234567890\"", key, id)
	}
}
