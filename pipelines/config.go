package pipelines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest/dataforseo"
	"github.com/kwdata/kwdata/ingest/googleads"
	"github.com/kwdata/kwdata/kw"
	"go.yaml.in/yaml/v3"
)

// Config is the configuration file of `kwdata schedule` and `kwdata run`
// (YAML). LoadConfig fills the defaults documented on each field, makes
// every path absolute and validates the whole file.
type Config struct {
	// Data is the data folder (lake, index, state). Required.
	Data string `yaml:"data"`
	// Countries are the markets to ingest, lower case after loading.
	// Required; each must be supported (kw.LookupCountry).
	Countries []string `yaml:"countries"`
	// Schedule is the cron spec of `kwdata schedule`: 5 fields ("0 3 * * *"),
	// optionally preceded by a seconds field, or a descriptor (@daily,
	// @hourly, @every 6h). Optional for `kwdata run`.
	Schedule string `yaml:"schedule"`
	// Timezone is the IANA zone the schedule and the run date are read in.
	// Default "UTC".
	Timezone string `yaml:"timezone"`
	// Retention says how many index builds and days of lake partitions to
	// keep. Default 3 builds and 35 days.
	Retention Retention `yaml:"retention"`
	// Keywords maps a country to a file with its keyword universe, one
	// keyword a line, for the API sources.
	Keywords map[string]string `yaml:"keywords"`
	// Files maps a country to export files to ingest instead of (or before)
	// the APIs: for operators without API access, and for tests.
	Files map[string]FileSources `yaml:"files"`
	// GoogleAds is the Google Ads API account; nil when the section is absent.
	GoogleAds *GoogleAdsConfig `yaml:"googleads"`
	// DataForSEO is the DataForSEO account; nil when the section is absent.
	DataForSEO *DataForSEOConfig `yaml:"dataforseo"`

	// Path is the absolute path of the file the configuration came from.
	Path string `yaml:"-"`
	// Location is Timezone, loaded.
	Location *time.Location `yaml:"-"`
}

// FileSources are the input files of one country.
type FileSources struct {
	// PlannerCSV are Keyword Planner exports (UTF-16, tab separated).
	PlannerCSV []string `yaml:"planner_csv"`
	// SERPJSONL are SERP JSON Lines files.
	SERPJSONL []string `yaml:"serp_jsonl"`
	// USDRate maps a currency code to its value in USD per unit
	// ({EUR: 1.08}), for planner exports in another currency than USD;
	// the config form of `kwdata ingest --usd-rate EUR=1.08`. Codes are
	// upper case after loading. Default none: such an export is refused.
	USDRate map[string]float64 `yaml:"usd_rate"`
}

// GoogleAdsConfig is the googleads section. It maps one to one onto the
// Google Ads client's configuration.
type GoogleAdsConfig struct {
	// Endpoint is the API root. Default https://googleads.googleapis.com.
	Endpoint string `yaml:"endpoint"`
	// APIVersion is the REST version path element. Default
	// DefaultGoogleAdsVersion, the version the client is written against.
	APIVersion string `yaml:"api_version"`
	// CustomerID is the account the planner runs as (digits; dashes are
	// removed). Required.
	CustomerID string `yaml:"customer_id"`
	// LoginCustomerID is the manager account, if access goes through one.
	LoginCustomerID string `yaml:"login_customer_id"`
	// TokenURL is the OAuth2 token endpoint. Default
	// https://oauth2.googleapis.com/token.
	TokenURL string `yaml:"token_url"`
	// ClientID, ClientSecret and RefreshToken are the OAuth2 credentials.
	// Required.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	RefreshToken string `yaml:"refresh_token"`
	// DeveloperToken is sent as developer-token when set.
	DeveloperToken string `yaml:"developer_token"`
	// RequestsPerSecond paces API requests. Default 1.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// USDRate is the value in USD of one unit of the account's currency
	// (1.08 for EUR). The account's currency is read before the first
	// request; one other than USD is refused unless this is set. Default
	// 0: none.
	USDRate float64 `yaml:"usd_rate"`
	// ExpandIdeas is the most new keywords a run adds to each country's
	// keyword list from GenerateKeywordIdeas, seeded with that list, before
	// fetching metrics. Default 0: no expansion.
	ExpandIdeas int `yaml:"expand_ideas"`
}

// DataForSEOConfig is the dataforseo section.
type DataForSEOConfig struct {
	// Endpoint is the API root. Default https://api.dataforseo.com.
	Endpoint string `yaml:"endpoint"`
	// Login and Password are the HTTP Basic credentials. Required.
	Login    string `yaml:"login"`
	Password string `yaml:"password"`
	// MaxSERPsPerRun is the SERP refresh budget of one run, shared by all
	// its countries, oldest first. Default DefaultMaxSERPsPerRun.
	MaxSERPsPerRun int `yaml:"max_serps_per_run"`
	// MaxAgeDays is the age after which a keyword's SERP is stale and no
	// longer used by the similarity stage. Default 30. It must not exceed
	// retention.keep_days, or retention would delete SERPs still in use.
	MaxAgeDays int `yaml:"max_age_days"`
}

// Defaults of the configuration file. The source defaults are the client
// packages' own, so a key left out means the same as a client left at its
// zero value.
const (
	DefaultTimezone          = "UTC"
	DefaultGoogleAdsEndpoint = googleads.DefaultEndpoint
	DefaultGoogleAdsVersion  = googleads.DefaultAPIVersion
	DefaultGoogleAdsTokenURL = googleads.DefaultTokenURL
	DefaultDataForSEO        = dataforseo.DefaultEndpoint
	DefaultMaxSERPsPerRun    = dataforseo.DefaultMaxSERPsPerRun
)

// maxConfigBytes bounds what LoadConfig reads; a configuration file is a
// few hundred bytes, so anything far larger is the wrong file.
const maxConfigBytes = 1 << 20

// LoadConfig reads the configuration file at path. getenv resolves ${VAR}
// references in string values (pass os.Getenv); a reference to an unset or
// empty variable is an error naming the variable when the key needs a value.
// Relative paths in the file are resolved against the file's folder. Every
// problem found is reported in one error, each naming its key and what to
// write instead.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	return LoadConfigData(path, getenv, "")
}

// LoadConfigData is LoadConfig for a command that takes the data folder as
// a flag: data, when not empty, replaces the file's data key, which may
// then be left out, and is resolved against the working directory like
// any path given on a command line.
func LoadConfigData(path string, getenv func(string) string, data string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve config path %s: %w", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("cannot open config: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read config %s: %w", path, err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("config %s is larger than %d bytes; is it the right file?", path, maxConfigBytes)
	}
	if data != "" {
		d, err := filepath.Abs(data)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve data folder %s: %w", data, err)
		}
		data = d
	}
	cfg, err := parseConfig(b, filepath.Dir(abs), getenv, data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.Path = abs
	return cfg, nil
}

// parseConfig decodes, expands, resolves and validates a configuration
// file's content; dir is the folder relative paths are resolved against,
// and data, when not empty, is the absolute data folder that replaces the
// file's. Its error is one line, even when it quotes a multi-line value.
func parseConfig(b []byte, dir string, getenv func(string) string, data string) (*Config, error) {
	cfg, err := decodeConfig(b, dir, getenv, data)
	if err != nil {
		return nil, errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	return cfg, nil
}

func decodeConfig(b []byte, dir string, getenv func(string) string, data string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("the file is empty; write at least data:, countries: and a source per country")
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlError(err) // not YAML at all: nothing further can be read
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, errors.New("the file holds more than one YAML document; keep only one")
	}
	// The file as written is checked against Config first, so unknown keys
	// and wrong types are reported with the line numbers the operator sees
	// (${VAR} references are plain strings at this point). They join the
	// other problems instead of hiding them: the offending entries are
	// dropped from the tree, and the rest is decoded and validated.
	var p problems
	bad := map[string]bool{}
	checkShape(&doc, reflect.TypeOf(Config{}), "", &p, bad)
	// Then ${VAR} is expanded in the node tree, and the tree decoded.
	// Expanding after parsing means a secret holding ": " or "#" cannot
	// change the structure of the file.
	missing := map[string][]string{}
	if err := expandNode(&doc, "", getenv, missing); err != nil {
		return nil, err
	}
	var cfg Config
	if err := doc.Decode(&cfg); err != nil {
		// checkShape should have caught it; say it plainly anyway.
		p.addf("%v", yamlError(err))
		return nil, p.err()
	}
	if data != "" {
		// The flag wins, and a data key that names an unset variable
		// does not matter any more.
		cfg.Data = data
		delete(missing, "data")
	}
	for _, problem := range cfg.finish(dir, missing) {
		if !aboutKey(problem, bad) {
			p = append(p, problem)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// aboutKey reports whether a problem names one of the keys in keys (or an
// element or child of one): a key already reported for its type is not
// reported again as empty.
func aboutKey(problem string, keys map[string]bool) bool {
	for k := range keys {
		if rest, ok := strings.CutPrefix(problem, k); ok && (rest == "" || strings.ContainsAny(rest[:1], " :.[")) {
			return true
		}
	}
	return false
}

// yamlError turns a decoder error into one line without the "yaml:" prefix.
func yamlError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s", strings.Join(te.Errors, "; "))
	}
	return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// expandNode replaces ${VAR} in every scalar value below n. Keys are not
// expanded. missing collects, per key path, the variables that were unset.
func expandNode(n *yaml.Node, path string, getenv func(string) string, missing map[string][]string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := expandNode(c, path, getenv, missing); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			p := key
			if path != "" {
				p = path + "." + key
			}
			if err := expandNode(n.Content[i+1], p, getenv, missing); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := expandNode(c, fmt.Sprintf("%s[%d]", path, i), getenv, missing); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return nil
		}
		v, unset, err := expandEnv(n.Value, getenv)
		if err != nil {
			return fmt.Errorf("%s (line %d): %w", path, n.Line, err)
		}
		if len(unset) > 0 {
			missing[path] = unset
		}
		// The value stays a string whatever it expanded to: a password
		// of "~" or "123" must not turn into null or a number.
		n.Value, n.Tag = v, "!!str"
	}
	return nil
}

// expandEnv replaces ${NAME} in s with getenv(NAME). "$${" is a literal
// "${"; a "$" not followed by "{" is kept as is, so passwords with "$" need
// no escaping. unset lists the variables that resolved to "".
func expandEnv(s string, getenv func(string) string) (out string, unset []string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("%q has a ${ without a closing }; write ${NAME}, or $${ for a literal ${", s)
		}
		name := s[i+2 : i+2+end]
		if !validEnvName(name) {
			return "", nil, fmt.Errorf("${%s} is not a variable reference; names are letters, digits and _, not starting with a digit", name)
		}
		v := getenv(name)
		if v == "" {
			unset = append(unset, name)
		}
		b.WriteString(v)
		i += 2 + end + 1
	}
	return b.String(), unset, nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// problems collects every validation error of a file, so that an operator
// fixes them all in one go.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return errors.New(strings.Join(p, "; "))
}

// finish fills defaults, resolves paths and validates; it returns every
// problem it found.
func (c *Config) finish(dir string, missing map[string][]string) problems {
	var p problems
	// reported holds the keys whose unset variables are already reported.
	reported := map[string]bool{}
	unsetVars := func(key string) bool {
		vars := missing[key]
		if len(vars) == 0 || reported[key] {
			return len(vars) > 0
		}
		reported[key] = true
		p.addf("%s: environment variable %s is not set; export it or write the value", key, strings.Join(vars, ", "))
		return true
	}
	// required reports an empty required key, naming the variable when the
	// value came from an unset one.
	required := func(key, value, example string) {
		if unsetVars(key) || value != "" {
			return
		}
		p.addf("%s is empty; write e.g. %s: %s", key, key, example)
	}
	resolve := func(s string) string {
		if s == "" || filepath.IsAbs(s) {
			return s
		}
		return filepath.Join(dir, s)
	}

	required("data", c.Data, "./data")
	c.Data = resolve(c.Data)

	if len(c.Countries) == 0 {
		p.addf("countries is empty; write e.g. countries: [us, de]")
	}
	configured := map[string]bool{}
	for i, cc := range c.Countries {
		country, ok := kw.LookupCountry(cc)
		if !ok {
			p.addf("countries[%d]: %q is not a supported country; write an ISO 3166-1 alpha-2 code, one of %s", i, cc, supportedCodes())
			continue
		}
		code := strings.ToLower(country.Code)
		if configured[code] {
			p.addf("countries[%d]: %s is listed twice; list each country once", i, code)
		}
		configured[code] = true
		c.Countries[i] = code
	}

	if c.Schedule != "" {
		if _, err := ParseSchedule(c.Schedule); err != nil {
			p.addf("schedule: %v", err)
		}
	}
	if c.Timezone == "" {
		c.Timezone = DefaultTimezone
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		p.addf("timezone: %q is not a known time zone; write an IANA name such as UTC or Europe/Berlin", c.Timezone)
	}
	c.Location = loc

	if c.Retention.KeepBuilds < 0 || c.Retention.KeepBuilds == 1 {
		p.addf("retention.keep_builds is %d; write a number of builds of at least %d (default %d): a server still reads the previous build for a few seconds after a publish",
			c.Retention.KeepBuilds, minKeepBuilds, DefaultKeepBuilds)
	}
	if c.Retention.KeepDays < 0 {
		p.addf("retention.keep_days is %d; write a number of days of at least 1 (default %d)", c.Retention.KeepDays, DefaultKeepDays)
	}
	c.Retention = c.Retention.withDefaults()

	// countryKey checks a per-country map key and returns it lower case.
	countryKey := func(section, key string) (string, bool) {
		country, ok := kw.LookupCountry(key)
		if !ok {
			p.addf("%s.%s: %q is not a supported country; write an ISO 3166-1 alpha-2 code", section, key, key)
			return "", false
		}
		code := strings.ToLower(country.Code)
		if !configured[code] {
			p.addf("%s.%s: %s is not in countries; add it to countries or remove this entry", section, key, code)
			return "", false
		}
		return code, true
	}
	keywords := make(map[string]string, len(c.Keywords))
	for _, key := range sortedKeys(c.Keywords) {
		code, ok := countryKey("keywords", key)
		if !ok {
			continue
		}
		required("keywords."+key, c.Keywords[key], "seeds/"+code+".txt")
		keywords[code] = resolve(c.Keywords[key])
	}
	c.Keywords = keywords
	files := make(map[string]FileSources, len(c.Files))
	for _, key := range sortedKeys(c.Files) {
		code, ok := countryKey("files", key)
		if !ok {
			continue
		}
		fs := c.Files[key]
		for i, name := range fs.PlannerCSV {
			required(fmt.Sprintf("files.%s.planner_csv[%d]", key, i), name, "exports/"+code+".csv")
			fs.PlannerCSV[i] = resolve(name)
		}
		for i, name := range fs.SERPJSONL {
			required(fmt.Sprintf("files.%s.serp_jsonl[%d]", key, i), name, "serps/"+code+".jsonl")
			fs.SERPJSONL[i] = resolve(name)
		}
		fs.USDRate = usdRates(&p, "files."+key+".usd_rate", fs.USDRate)
		files[code] = fs
	}
	c.Files = files

	if g := c.GoogleAds; g != nil {
		if g.Endpoint == "" {
			g.Endpoint = DefaultGoogleAdsEndpoint
		}
		if g.APIVersion == "" {
			g.APIVersion = DefaultGoogleAdsVersion
		}
		if g.TokenURL == "" {
			g.TokenURL = DefaultGoogleAdsTokenURL
		}
		if g.RequestsPerSecond == 0 {
			g.RequestsPerSecond = 1
		}
		checkURL(&p, "googleads.endpoint", g.Endpoint)
		checkURL(&p, "googleads.token_url", g.TokenURL)
		if !strings.HasPrefix(g.APIVersion, "v") {
			p.addf("googleads.api_version: %q is not a version; write e.g. %s", g.APIVersion, DefaultGoogleAdsVersion)
		}
		required("googleads.customer_id", g.CustomerID, `"1234567890"`)
		checkCustomerID(&p, "googleads.customer_id", g.CustomerID)
		checkCustomerID(&p, "googleads.login_customer_id", g.LoginCustomerID)
		required("googleads.client_id", g.ClientID, "${GOOGLE_ADS_CLIENT_ID}")
		required("googleads.client_secret", g.ClientSecret, "${GOOGLE_ADS_CLIENT_SECRET}")
		required("googleads.refresh_token", g.RefreshToken, "${GOOGLE_ADS_REFRESH_TOKEN}")
		if g.RequestsPerSecond < 0 || g.RequestsPerSecond > 100 {
			p.addf("googleads.requests_per_second is %v; write a positive number such as 1", g.RequestsPerSecond)
		}
		if !(g.USDRate >= 0) || math.IsInf(g.USDRate, 0) {
			p.addf("googleads.usd_rate is %v; write the USD value of one unit of the account's currency, e.g. 1.08 for EUR, or leave it out for a USD account", g.USDRate)
		}
		if g.ExpandIdeas < 0 {
			p.addf("googleads.expand_ideas is %d; write the most new keywords a run may add per country, or 0 for none", g.ExpandIdeas)
		}
	}
	if d := c.DataForSEO; d != nil {
		if d.Endpoint == "" {
			d.Endpoint = DefaultDataForSEO
		}
		if d.MaxSERPsPerRun == 0 {
			d.MaxSERPsPerRun = DefaultMaxSERPsPerRun
		}
		if d.MaxAgeDays == 0 {
			d.MaxAgeDays = kw.DefaultSERPMaxAgeDays
		}
		checkURL(&p, "dataforseo.endpoint", d.Endpoint)
		required("dataforseo.login", d.Login, "${DATAFORSEO_LOGIN}")
		required("dataforseo.password", d.Password, "${DATAFORSEO_PASSWORD}")
		if d.MaxSERPsPerRun < 0 {
			p.addf("dataforseo.max_serps_per_run is %d; write a positive budget such as %d", d.MaxSERPsPerRun, DefaultMaxSERPsPerRun)
		}
		if d.MaxAgeDays < 0 {
			p.addf("dataforseo.max_age_days is %d; write a positive number of days such as %d", d.MaxAgeDays, kw.DefaultSERPMaxAgeDays)
		}
		if d.MaxAgeDays > 0 && c.Retention.KeepDays < d.MaxAgeDays {
			p.addf("retention.keep_days is %d but dataforseo.max_age_days is %d: retention would delete SERPs the similarity stage still uses; write keep_days: %d or more, or a smaller max_age_days",
				c.Retention.KeepDays, d.MaxAgeDays, d.MaxAgeDays)
		}
		c.Retention.MaxAgeDays = d.MaxAgeDays
	}

	// Any other reference to an unset variable is a mistake too, except
	// in the keys that may be empty.
	for _, key := range sortedKeys(missing) {
		if !optionalEnvKeys[key] {
			unsetVars(key)
		}
	}

	// A country with no keyword source would ingest nothing and fail
	// every night; say so now.
	for _, code := range c.Countries {
		if !configured[code] {
			continue
		}
		hasFiles := len(c.Files[code].PlannerCSV) > 0
		hasAPI := c.Keywords[code] != "" && c.GoogleAds != nil
		if !hasFiles && !hasAPI {
			p.addf("countries: %s has no keyword source; add files.%s.planner_csv, or keywords.%s together with a googleads section", code, code, code)
		}
	}
	return p
}

// usdRates checks a currency → USD rate map and returns it with upper-case
// codes, reporting problems under key.
func usdRates(p *problems, key string, rates map[string]float64) map[string]float64 {
	if len(rates) == 0 {
		return nil
	}
	out := make(map[string]float64, len(rates))
	for _, cur := range sortedKeys(rates) {
		rate, code := rates[cur], strings.ToUpper(strings.TrimSpace(cur))
		switch _, dup := out[code]; {
		case len(code) != 3 || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
			p.addf("%s: %q is not a currency code; write an ISO 4217 code such as EUR: 1.08", key, cur)
		case dup:
			p.addf("%s: %s is given twice; give each currency once", key, code)
		case !(rate > 0) || math.IsInf(rate, 0):
			p.addf("%s.%s is %v; write the USD value of one %s, e.g. 1.08", key, cur, rate, code)
		case code == "USD" && rate != 1:
			p.addf("%s.%s is %v; USD needs no rate, remove it", key, cur, rate)
		}
		out[code] = rate
	}
	return out
}

// optionalEnvKeys may reference an unset variable; they are then empty.
var optionalEnvKeys = map[string]bool{
	"googleads.login_customer_id": true,
	"googleads.developer_token":   true,
}

func checkURL(p *problems, key, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.addf("%s: %q is not an http(s) URL; write e.g. https://host", key, raw)
	}
}

func checkCustomerID(p *problems, key, id string) {
	digits := strings.ReplaceAll(id, "-", "")
	if id == "" {
		return
	}
	if _, err := strconv.ParseUint(digits, 10, 64); err != nil || len(digits) != 10 {
		p.addf("%s: %q is not a customer id; write the 10 digits, quoted, e.g. \"1234567890\"", key, id)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// supportedCodes lists the supported country codes, lower case.
func supportedCodes() string {
	var codes []string
	for _, c := range kw.Countries() {
		codes = append(codes, strings.ToLower(c.Code))
	}
	return strings.Join(codes, " ")
}
