package kw

// The datasets of the lake (SPEC §5). Each is Hive-partitioned by country and
// date; the struct tags are the Parquet column names analysts see.
const (
	DatasetKeywords = "keywords"
	DatasetSERPs    = "serps"
	DatasetRelated  = "related"
	DatasetIntents  = "intents"
)

// MonthlySearches is the search volume of one calendar month.
type MonthlySearches struct {
	Month    string `parquet:"month"` // "YYYY-MM"
	Searches int64  `parquet:"searches"`
}

// KeywordRecord is one keyword's planning data in one country on one date.
// Money is integer micros of USD.
type KeywordRecord struct {
	Keyword          string            `parquet:"keyword"`
	Volume           int64             `parquet:"volume"`
	VolumeRange      string            `parquet:"volume_range,optional"` // "1K – 10K"; empty (null) unless the source gave a range
	CPCMicros        int64             `parquet:"cpc_micros"`
	Competition      float64           `parquet:"competition"`       // 0.00–1.00
	CompetitionLevel string            `parquet:"competition_level"` // "LOW", "MEDIUM", "HIGH" or ""
	BidLowMicros     int64             `parquet:"bid_low_micros"`
	BidHighMicros    int64             `parquet:"bid_high_micros"`
	Monthly          []MonthlySearches `parquet:"monthly,list"` // oldest first
	Source           string            `parquet:"source"`       // "planner-csv", "googleads", ...
}

// MaxRank is the last rank of a SERP that counts: a SERP is a keyword's
// top-20 organic results, ranks 1 to MaxRank. Every reader of SERPs (the
// file and API importers, the similarity stage) keeps, of one keyword's
// results sorted by rank, at most MaxRank whose rank is 1 to MaxRank, so a
// SERP with rank gaps or a rank past 20 means the same thing everywhere.
const MaxRank = 20

// InTop reports whether a result ranked rank is among the top MaxRank.
func InTop(rank int32) bool { return rank >= 1 && rank <= MaxRank }

// SERPRow is one organic result of one keyword's top-20 results.
type SERPRow struct {
	Keyword string `parquet:"keyword"`
	Rank    int32  `parquet:"rank"`
	URL     string `parquet:"url"`
	URLKey  string `parquet:"url_key"`
}

// RelatedRow is one of a keyword's (at most 10) related keywords, ranked as
// SPEC §6 says.
type RelatedRow struct {
	Keyword    string `parquet:"keyword"`
	Rank       int32  `parquet:"rank"` // 1–10
	Related    string `parquet:"related"`
	Overlap    int32  `parquet:"overlap"` // shared result URL keys, 1–20
	Volume     int64  `parquet:"volume"`  // of the related keyword
	CPCMicros  int64  `parquet:"cpc_micros"`
	SameIntent bool   `parquet:"same_intent"`
}

// IntentRow names a keyword's intent leader (SPEC §6); every keyword has one.
type IntentRow struct {
	Keyword string `parquet:"keyword"`
	Intent  string `parquet:"intent"`
}

// MicrosPerUnit is the number of micros in one USD.
const MicrosPerUnit = 1_000_000
