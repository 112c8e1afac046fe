package googleads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/kwdata/kwdata/ingest/internal/retry"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The REST interface maps protobuf to JSON with the proto3 JSON rules: field
// names in lowerCamelCase, int64 as decimal strings, enums as their names,
// and fields that are not set left out. The types below decode exactly that
// and nothing more; they also accept plain JSON numbers for int64 and enum
// numbers, which the same mapping allows parsers to accept.

// optInt64 is an int64 that may be absent or null.
type optInt64 struct {
	V     int64
	Valid bool
}

// UnmarshalJSON accepts a decimal string, a number or null.
func (n *optInt64) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = optInt64{}
		return nil
	}
	s, err := unquote(b)
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 field holds %q, want a decimal integer", s)
	}
	*n = optInt64{V: v, Valid: true}
	return nil
}

// MarshalJSON writes the wire form: a decimal string, or null.
func (n optInt64) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return json.Marshal(strconv.FormatInt(n.V, 10))
}

// unquote returns a JSON string's text, or b itself when it is not a
// string. Numbers and enum names never hold escapes, so the common case
// skips the general decoder.
func unquote(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' {
		return string(b), nil
	}
	if inner := b[1 : len(b)-1]; b[len(b)-1] == '"' && bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 {
		return string(inner), nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// enumValue is an enum by name ("HIGH"), or "#<n>" when the wire held its
// number.
type enumValue string

// UnmarshalJSON accepts an enum name, an enum number or null.
func (e *enumValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*e = ""
	case len(b) > 0 && b[0] == '"':
		s, err := unquote(b)
		if err != nil {
			return err
		}
		*e = enumValue(s)
	default:
		n, err := strconv.ParseInt(string(b), 10, 32)
		if err != nil {
			return fmt.Errorf("enum field holds %s, want a name or a number", b)
		}
		*e = enumValue("#" + strconv.FormatInt(n, 10))
	}
	return nil
}

// name resolves an enum number to its name through names (indexed by
// number); names pass through.
func (e enumValue) name(names []string) string {
	s := string(e)
	if !strings.HasPrefix(s, "#") {
		return s
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 || n >= len(names) {
		return ""
	}
	return names[n]
}

// Enum tables by number, from the API reference.
var (
	monthNames = []string{"UNSPECIFIED", "UNKNOWN", "JANUARY", "FEBRUARY", "MARCH", "APRIL",
		"MAY", "JUNE", "JULY", "AUGUST", "SEPTEMBER", "OCTOBER", "NOVEMBER", "DECEMBER"}
	competitionNames = []string{"UNSPECIFIED", "UNKNOWN", "LOW", "MEDIUM", "HIGH"}
)

// monthNumber returns 1–12 for a MonthOfYear enum, or 0.
func monthNumber(e enumValue) int {
	name := e.name(monthNames)
	for i := 2; i < len(monthNames); i++ {
		if monthNames[i] == name {
			return i - 1
		}
	}
	return 0
}

// competitionLevel maps KeywordPlanCompetitionLevel to the lake's
// competition_level: LOW, MEDIUM, HIGH, or "" for UNSPECIFIED, UNKNOWN and
// anything newer than this client.
func competitionLevel(e enumValue) string {
	switch name := e.name(competitionNames); name {
	case "LOW", "MEDIUM", "HIGH":
		return name
	}
	return ""
}

// historicalMetricsRequest is GenerateKeywordHistoricalMetricsRequest.
type historicalMetricsRequest struct {
	Keywords                 []string                 `json:"keywords"`
	GeoTargetConstants       []string                 `json:"geoTargetConstants"`
	Language                 string                   `json:"language"`
	KeywordPlanNetwork       string                   `json:"keywordPlanNetwork"`
	HistoricalMetricsOptions historicalMetricsOptions `json:"historicalMetricsOptions"`
}

type historicalMetricsOptions struct {
	IncludeAverageCpc bool `json:"includeAverageCpc"`
}

// keywordIdeasRequest is GenerateKeywordIdeasRequest with a keyword seed.
type keywordIdeasRequest struct {
	GeoTargetConstants       []string                 `json:"geoTargetConstants"`
	Language                 string                   `json:"language"`
	KeywordPlanNetwork       string                   `json:"keywordPlanNetwork"`
	IncludeAdultKeywords     bool                     `json:"includeAdultKeywords"`
	PageSize                 int                      `json:"pageSize,omitempty"`
	PageToken                string                   `json:"pageToken,omitempty"`
	KeywordSeed              keywordSeed              `json:"keywordSeed"`
	HistoricalMetricsOptions historicalMetricsOptions `json:"historicalMetricsOptions"`
}

type keywordSeed struct {
	Keywords []string `json:"keywords"`
}

// historicalMetricsResponse is GenerateKeywordHistoricalMetricsResponse.
type historicalMetricsResponse struct {
	Results []historicalResult `json:"results"`
}

type historicalResult struct {
	Text           string          `json:"text"`
	CloseVariants  []string        `json:"closeVariants"`
	KeywordMetrics *keywordMetrics `json:"keywordMetrics"`
}

// keywordMetrics is KeywordPlanHistoricalMetrics.
type keywordMetrics struct {
	AvgMonthlySearches     optInt64              `json:"avgMonthlySearches"`
	MonthlySearchVolumes   []monthlySearchVolume `json:"monthlySearchVolumes"`
	Competition            enumValue             `json:"competition"`
	CompetitionIndex       optInt64              `json:"competitionIndex"`
	LowTopOfPageBidMicros  optInt64              `json:"lowTopOfPageBidMicros"`
	HighTopOfPageBidMicros optInt64              `json:"highTopOfPageBidMicros"`
	AverageCpcMicros       optInt64              `json:"averageCpcMicros"`
}

// monthlySearchVolume is MonthlySearchVolume.
type monthlySearchVolume struct {
	Year            optInt64  `json:"year"`
	Month           enumValue `json:"month"`
	MonthlySearches optInt64  `json:"monthlySearches"`
}

// keywordIdeasResponse is GenerateKeywordIdeaResponse.
type keywordIdeasResponse struct {
	Results       []ideaResult `json:"results"`
	NextPageToken string       `json:"nextPageToken"`
	TotalSize     optInt64     `json:"totalSize"`
}

type ideaResult struct {
	Text               string          `json:"text"`
	CloseVariants      []string        `json:"closeVariants"`
	KeywordIdeaMetrics *keywordMetrics `json:"keywordIdeaMetrics"`
}

// searchRequest is SearchGoogleAdsRequest.
type searchRequest struct {
	Query string `json:"query"`
}

// searchResponse is SearchGoogleAdsResponse for the currency query: one
// GoogleAdsRow holding the customer.
type searchResponse struct {
	Results []struct {
		Customer struct {
			ResourceName string `json:"resourceName"`
			CurrencyCode string `json:"currencyCode"`
		} `json:"customer"`
	} `json:"results"`
	FieldMask string `json:"fieldMask"`
}

// errorEnvelope is google.rpc.Status as the REST interface returns it, with
// GoogleAdsFailure (and the generic RetryInfo) among its details.
type errorEnvelope struct {
	Error struct {
		Code    int           `json:"code"`
		Message string        `json:"message"`
		Status  string        `json:"status"`
		Details []errorDetail `json:"details"`
	} `json:"error"`
}

type errorDetail struct {
	Type       string     `json:"@type"`
	Errors     []adsError `json:"errors"`
	RequestID  string     `json:"requestId"`
	RetryDelay string     `json:"retryDelay"` // google.rpc.RetryInfo
}

// adsError is GoogleAdsError; errorCode is a oneof of enums keyed by the
// error family ("quotaError": "RESOURCE_EXHAUSTED").
type adsError struct {
	ErrorCode map[string]json.RawMessage `json:"errorCode"`
	Message   string                     `json:"message"`
	Details   struct {
		QuotaErrorDetails *struct {
			RateScope  string `json:"rateScope"`
			RateName   string `json:"rateName"`
			RetryDelay string `json:"retryDelay"`
		} `json:"quotaErrorDetails"`
	} `json:"details"`
}

// decodeHistoricalMetrics decodes a GenerateKeywordHistoricalMetrics body.
func decodeHistoricalMetrics(body []byte) (historicalMetricsResponse, error) {
	var r historicalMetricsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return historicalMetricsResponse{}, fmt.Errorf("cannot decode GenerateKeywordHistoricalMetrics response: %w", err)
	}
	return r, nil
}

// decodeKeywordIdeas decodes a GenerateKeywordIdeas body.
func decodeKeywordIdeas(body []byte) (keywordIdeasResponse, error) {
	var r keywordIdeasResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return keywordIdeasResponse{}, fmt.Errorf("cannot decode GenerateKeywordIdeas response: %w", err)
	}
	return r, nil
}

// retryInMessage finds the "Retry in N seconds" the quota messages carry.
var retryInMessage = regexp.MustCompile(`(?i)retry in (\d{1,9}) seconds?`)

// decodeError turns a non-2xx response into an *APIError. It never fails:
// a body that is not the documented error shape becomes an APIError that
// quotes the start of the body.
func decodeError(httpStatus int, body []byte) *APIError {
	e := &APIError{HTTPStatus: httpStatus}
	var env errorEnvelope
	if err := json.Unmarshal(body, &env); err != nil || (env.Error.Message == "" && env.Error.Status == "") {
		e.Message = retry.Snippet(body)
		return e
	}
	e.Status = env.Error.Status
	e.Message = env.Error.Message
	for _, d := range env.Error.Details {
		if d.RequestID != "" {
			e.RequestID = d.RequestID
		}
		if d.RetryDelay != "" {
			if delay, ok := parseProtoDuration(d.RetryDelay); ok {
				e.RetryDelay, e.HasRetryDelay = delay, true
			}
		}
		for _, ae := range d.Errors {
			for family, raw := range ae.ErrorCode {
				var v enumValue
				if json.Unmarshal(raw, &v) == nil {
					e.Codes = append(e.Codes, family+"="+string(v))
					if family == "quotaError" && (v == "RESOURCE_EXHAUSTED" || v == "RESOURCE_TEMPORARILY_EXHAUSTED") {
						e.Quota = true
					}
				}
			}
			if ae.Message != "" {
				e.Details = append(e.Details, ae.Message)
			}
			if q := ae.Details.QuotaErrorDetails; q != nil {
				e.RateName = q.RateName
				if delay, ok := parseProtoDuration(q.RetryDelay); ok {
					e.RetryDelay, e.HasRetryDelay = delay, true
				}
			}
		}
	}
	if env.Error.Status == "RESOURCE_EXHAUSTED" {
		e.Quota = true
	}
	if !e.HasRetryDelay {
		for _, m := range append([]string{e.Message}, e.Details...) {
			if sm := retryInMessage.FindStringSubmatch(m); sm != nil {
				n, _ := strconv.ParseInt(sm[1], 10, 64)
				e.RetryDelay, e.HasRetryDelay = time.Duration(n)*time.Second, true
				break
			}
		}
	}
	return e
}

// parseProtoDuration parses google.protobuf.Duration JSON ("30s", "1.5s").
func parseProtoDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, "s") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
	if err != nil || !(f >= 0 && f <= 1e9) { // also rejects NaN and Inf
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}
