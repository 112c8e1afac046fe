// Package servetest holds what the tests of serve and its rooms share: an
// in-memory index with fixtures, and the documents the API answers as
// encoding/json sees them. Only tests import it.
package servetest

// KeywordDoc is the GET /v1/keyword document as encoding/json sees it.
type KeywordDoc struct {
	Keyword     string       `json:"keyword"`
	Country     string       `json:"country"`
	Volume      *int64       `json:"volume"`
	VolumeRange string       `json:"volume_range,omitempty"`
	CPC         *float64     `json:"cpc"`
	Competition *float64     `json:"competition"`
	YoY         *float64     `json:"yoy"`
	YoYFromZero bool         `json:"yoy_from_zero,omitempty"`
	ThreeMonth  *float64     `json:"three_month"`
	TMFromZero  bool         `json:"three_month_from_zero,omitempty"`
	Updated     string       `json:"updated"`
	Intent      string       `json:"intent"`
	Trend       []TrendDoc   `json:"trend"`
	Related     []RelatedDoc `json:"related"`
}

// TrendDoc is one month of KeywordDoc.Trend.
type TrendDoc struct {
	Month  string `json:"month"`
	Volume *int64 `json:"volume"`
}

// RelatedDoc is one entry of KeywordDoc.Related.
type RelatedDoc struct {
	Keyword    string   `json:"keyword"`
	Volume     *int64   `json:"volume"`
	CPC        *float64 `json:"cpc"`
	Overlap    string   `json:"overlap"`
	SameIntent bool     `json:"same_intent"`
}
