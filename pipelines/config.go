package pipelines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest"
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
	// Publish, when its to is set, uploads every build the pipeline
	// publishes to an object store, for servers on other hosts (kwdata
	// serve --index s3://…). Default: none; builds stay in the data folder.
	Publish Publish `yaml:"publish"`
	// Sources are where the ingest stage takes each country's keywords
	// and SERPs from: the keywords, files, googleads and dataforseo
	// sections, which package ingest owns, defaults and checks.
	ingest.Sources `yaml:",inline"`

	// Path is the absolute path of the file the configuration came from.
	Path string `yaml:"-"`
	// Location is Timezone, loaded.
	Location *time.Location `yaml:"-"`
}

// Publish is the publish section: where the build-index stage uploads a
// new build once it is published locally. Credentials and region come
// from the standard AWS chain (environment, shared config), never from
// this file.
type Publish struct {
	// To is s3://BUCKET/PREFIX. Empty: no upload.
	To string `yaml:"to"`
	// Endpoint is the store's URL for stores other than AWS S3
	// (MinIO, Ceph, R2), e.g. http://minio:9000. Default: AWS S3.
	Endpoint string `yaml:"endpoint"`
}

// DefaultTimezone is the time zone of the schedule and the run date when
// the file names none.
const DefaultTimezone = "UTC"

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
// problem it found. The run settings are checked here, the sources by
// package ingest (Sources.Check), and what ties the two together (the
// SERP window retention must keep) after both.
func (c *Config) finish(dir string, missing map[string][]string) problems {
	var p problems
	// reported holds the keys whose unset variables are reported, or that
	// may be empty anyway.
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

	if !unsetVars("data") && c.Data == "" {
		p.addf("data is empty; write e.g. data: ./data")
	}
	if c.Data != "" && !filepath.IsAbs(c.Data) {
		c.Data = filepath.Join(dir, c.Data)
	}
	configured := c.checkCountries(&p)
	c.checkSchedule(&p)
	c.checkRetention(&p)
	c.checkPublish(&p)

	p = append(p, c.Sources.Check(dir, configured, func(key string, optional bool) bool {
		if optional {
			reported[key] = true
			return len(missing[key]) > 0
		}
		return unsetVars(key)
	})...)
	if d := c.DataForSEO; d != nil {
		if d.MaxAgeDays > 0 && c.Retention.KeepDays < d.MaxAgeDays {
			p.addf("retention.keep_days is %d but dataforseo.max_age_days is %d: retention would delete SERPs the similarity stage still uses; write keep_days: %d or more, or a smaller max_age_days",
				c.Retention.KeepDays, d.MaxAgeDays, d.MaxAgeDays)
		}
	}
	c.Retention.MaxAgeDays = c.SERPMaxAgeDays()

	// Any other reference to an unset variable is a mistake too, except
	// in the keys that may be empty.
	for _, key := range slices.Sorted(maps.Keys(missing)) {
		unsetVars(key)
	}
	return p
}

// checkCountries lower-cases the countries and returns those that are
// supported, each once.
func (c *Config) checkCountries(p *problems) []string {
	if len(c.Countries) == 0 {
		p.addf("countries is empty; write e.g. countries: [us, de]")
	}
	var configured []string
	for i, cc := range c.Countries {
		country, ok := kw.LookupCountry(cc)
		if !ok {
			p.addf("countries[%d]: %q is not a supported country; write an ISO 3166-1 alpha-2 code, one of %s", i, cc, supportedCodes())
			continue
		}
		code := strings.ToLower(country.Code)
		if slices.Contains(configured, code) {
			p.addf("countries[%d]: %s is listed twice; list each country once", i, code)
		} else {
			configured = append(configured, code)
		}
		c.Countries[i] = code
	}
	return configured
}

// checkSchedule checks the cron spec and loads the time zone.
func (c *Config) checkSchedule(p *problems) {
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
}

// checkRetention checks the retention section and fills its defaults.
func (c *Config) checkRetention(p *problems) {
	if c.Retention.KeepBuilds < 0 || c.Retention.KeepBuilds == 1 {
		p.addf("retention.keep_builds is %d; write a number of builds of at least %d (default %d): a server still reads the previous build for a few seconds after a publish",
			c.Retention.KeepBuilds, minKeepBuilds, DefaultKeepBuilds)
	}
	if c.Retention.KeepDays < 0 {
		p.addf("retention.keep_days is %d; write a number of days of at least 1 (default %d)", c.Retention.KeepDays, DefaultKeepDays)
	}
	c.Retention = c.Retention.withDefaults()
}

// checkPublish checks the shape of the publish section; the command that
// uploads parses it in full.
func (c *Config) checkPublish(p *problems) {
	to, ep := c.Publish.To, c.Publish.Endpoint
	if to != "" {
		bucket, _, _ := strings.Cut(strings.TrimPrefix(to, "s3://"), "/")
		if !strings.HasPrefix(to, "s3://") || bucket == "" {
			p.addf("publish.to is %q; write s3://BUCKET/PREFIX", to)
		}
	} else if ep != "" {
		p.addf("publish.endpoint is set but publish.to is empty; write to: s3://BUCKET/PREFIX")
	}
	if ep != "" && !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
		p.addf("publish.endpoint is %q; write the store's URL, e.g. http://minio:9000", ep)
	}
}

// supportedCodes lists the supported country codes, lower case.
func supportedCodes() string {
	var codes []string
	for _, c := range kw.Countries() {
		codes = append(codes, strings.ToLower(c.Code))
	}
	return strings.Join(codes, " ")
}
