package kw

// The datasets of the lake, the contract with analysts (docs/ANALYSTS.md
// lists their columns). Each is Hive-partitioned by country and date, at
// <data>/lake/<dataset>/country=<cc>/date=<YYYY-MM-DD>/part-NNNNN.parquet;
// rows are sorted by keyword (byte order), then rank; every metric column
// is nullable, NULL meaning the source gave no value. The struct tags are
// the Parquet column names analysts see.
const (
	DatasetKeywords = "keywords"
	DatasetSERPs    = "serps"
	DatasetRelated  = "related"
	DatasetIntents  = "intents"
)

// Missing values. A metric the source did not give is nil (a NULL in the
// lake, null in JSON, "—" on a page), never 0: zero searches or a zero CPC
// is a real measurement. Texts that are never empty when present (a range,
// a competition level) use "" for missing instead, stored as NULL too.

// MonthlySearches is the search volume of one calendar month.
type MonthlySearches struct {
	Month    string `parquet:"month"`             // "YYYY-MM"
	Searches *int64 `parquet:"searches,optional"` // nil: the source gave no value for the month
}

// KeywordRecord is one keyword's planning data in one country on one date.
// Money is integer micros of USD. Every metric is nil where the source gave
// no value.
type KeywordRecord struct {
	Keyword          string            `parquet:"keyword"`
	Volume           *int64            `parquet:"volume,optional"`
	VolumeRange      string            `parquet:"volume_range,optional"` // "1K – 10K"; empty (null) unless the source gave a range
	CPCMicros        *int64            `parquet:"cpc_micros,optional"`
	Competition      *float64          `parquet:"competition,optional"`       // 0.00–1.00
	CompetitionLevel string            `parquet:"competition_level,optional"` // "LOW", "MEDIUM", "HIGH"; empty (null) when unknown
	BidLowMicros     *int64            `parquet:"bid_low_micros,optional"`
	BidHighMicros    *int64            `parquet:"bid_high_micros,optional"`
	Monthly          []MonthlySearches `parquet:"monthly,list"` // oldest first
	// YoYChange and ThreeMonthChange are the planner's "YoY change" and
	// "Three month change" in percent (900 for "900%"), or computed from
	// Monthly by Changes where the source gives only the series. +Inf is
	// the planner's "∞": searches rose from zero. nil: the source said
	// nothing ("--") or the series is too short.
	YoYChange        *float64 `parquet:"yoy_change,optional"`
	ThreeMonthChange *float64 `parquet:"three_month_change,optional"`
	Source           string   `parquet:"source"` // "planner-csv", "googleads", ...
}

// VolumeOrZero is the volume the similarity ranking uses: a keyword whose
// source gave no volume ranks as volume 0 (the ranking compares numbers).
func (r *KeywordRecord) VolumeOrZero() int64 { return Deref(r.Volume) }

// MoreVolume reports whether volume a beats volume b where records of one
// keyword are merged (ingest keeps the largest): any volume beats none.
func MoreVolume(a, b *int64) bool {
	return a != nil && (b == nil || *a > *b)
}

// Deref returns *p, or 0 when p is nil.
func Deref[T int64 | float64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}

// Ptr returns a pointer to a copy of v: a value the source did give.
func Ptr[T any](v T) *T { return &v }

// MaxRank is the last rank of a SERP that counts: a SERP is a keyword's
// top-20 organic results, ranks 1 to MaxRank. Every reader of SERPs (the
// file and API importers, the similarity stage) keeps, of one keyword's
// results sorted by rank, at most MaxRank whose rank is 1 to MaxRank, so a
// SERP with rank gaps or a rank past 20 means the same thing everywhere.
const MaxRank = 20

// DefaultSERPMaxAgeDays is how old, in days before the data date, the SERP
// of a keyword may be for the similarity stage to use it, unless the
// operator sets another age (dataforseo.max_age_days, or
// `kwdata similarity --max-age-days`). Its one home is here because three
// parts must agree on it: the similarity stage reads SERPs that young,
// retention keeps the SERP partitions of that window, and DataForSEO
// refreshes keywords before their SERP ages out of it.
const DefaultSERPMaxAgeDays = 30

// InTop reports whether a result ranked rank is among the top MaxRank.
func InTop(rank int32) bool { return rank >= 1 && rank <= MaxRank }

// SERPRow is one organic result of one keyword's top-20 results.
type SERPRow struct {
	Keyword string `parquet:"keyword,dict"` // one value a keyword's twenty rows: dictionary-encoded
	Rank    int32  `parquet:"rank"`
	URL     string `parquet:"url"`
	URLKey  string `parquet:"url_key"`
}

// RelatedRow is one of a keyword's (at most 10) related keywords, ranked as
// the similarity package's doc says.
type RelatedRow struct {
	Keyword    string `parquet:"keyword"`
	Rank       int32  `parquet:"rank"` // 1–10
	Related    string `parquet:"related"`
	Overlap    int32  `parquet:"overlap"`             // shared result URL keys, 1–20
	Volume     *int64 `parquet:"volume,optional"`     // of the related keyword; nil where its source gave none
	CPCMicros  *int64 `parquet:"cpc_micros,optional"` // of the related keyword; nil where its source gave none
	SameIntent bool   `parquet:"same_intent"`
}

// IntentRow names a keyword's intent leader (the rule is in the similarity
// package's doc); every keyword has one.
// Overlap is the keyword's overlap with its leader (the leader's own row:
// the number of its distinct result URL keys), what the intent group shows
// as n/20; 0 in partitions written before the column existed.
type IntentRow struct {
	Keyword string `parquet:"keyword"`
	Intent  string `parquet:"intent"`
	Overlap int32  `parquet:"overlap"`
}

// MicrosPerUnit is the number of micros in one USD.
const MicrosPerUnit = 1_000_000
