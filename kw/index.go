package kw

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by Index.Lookup for a keyword the index lacks.
var ErrNotFound = errors.New("keyword not found")

// ErrNoIndex is returned by Index.Lookup while no index is published.
var ErrNoIndex = errors.New("no index is published")

// ErrIndexDamaged is wrapped in the error Index.Lookup returns when the
// served index cannot be read for that keyword (a damaged or unreadable
// file). Like ErrNoIndex it says nothing about the keyword: the server
// answers 503 and the index reloads its published build.
var ErrIndexDamaged = errors.New("the served index is damaged")

// Entry is everything the index holds for one keyword in one country: the
// record, its trend, its intent leader and its related keywords.
type Entry struct {
	Keyword          string
	Country          string // upper case
	DataDate         string // "YYYY-MM-DD", the lake date of the index build the entry came from
	Volume           *int64 // nil: the source gave no value (likewise CPCMicros, Competition)
	VolumeRange      string
	CPCMicros        *int64
	Competition      *float64
	CompetitionLevel string
	YoYChange        *float64 // percent; +Inf: rose from zero; nil: no value (KeywordRecord.YoYChange)
	ThreeMonthChange *float64
	Intent           string
	Trend            []MonthlySearches // up to 12 months, oldest first
	Related          []RelatedKeyword  // up to 10, in rank order
}

// RelatedKeyword is one related keyword as the index stores it.
type RelatedKeyword struct {
	Keyword    string
	Volume     *int64 // nil: no value (likewise CPCMicros)
	CPCMicros  *int64
	Overlap    int32
	SameIntent bool
}

// IndexInfo describes the index currently served.
type IndexInfo struct {
	Version   string // build id (directory name)
	DataDate  string // "YYYY-MM-DD", the lake date it was built from
	BuiltAt   time.Time
	Countries map[string]int // upper-case country code -> keyword count
	// Examples maps an upper-case country code to a few of its most
	// searched keywords, most searched first, for pages to offer; empty
	// for a build that recorded none.
	Examples map[string][]string
	// Damaged says why the served index cannot be read, naming the file
	// when known; empty while it reads cleanly. Lookups may still succeed
	// for keywords outside the damage, but the server is not ready.
	Damaged string
}

// Index answers lookups. The index package implements it; the server depends
// only on this interface.
type Index interface {
	// Lookup returns the entry of a normalized keyword in a country (upper
	// case), ErrNotFound, ErrNoIndex, or an error wrapping ErrIndexDamaged.
	Lookup(ctx context.Context, country, keyword string) (Entry, error)
	// Info describes the served index; ok is false while none is loaded.
	Info() (info IndexInfo, ok bool)
}

// MaxGroupMembers is the most members an intent group lists.
const MaxGroupMembers = 100

// IntentGroup is one intent leader's group (the leader rule is in the
// similarity package's doc): every keyword whose
// intent is the leader, the leader included.
type IntentGroup struct {
	Leader   string
	Country  string // upper case
	DataDate string // "YYYY-MM-DD" of the build it came from
	// Size is the number of keywords in the group, and TotalVolume the sum
	// of their volumes (a keyword without a volume adds nothing), over the
	// whole group, not only the members listed.
	Size        int64
	TotalVolume int64
	// Members are the first MaxGroupMembers by volume descending (none
	// ranks as 0), then text ascending; the leader is one of them unless
	// a hundred members outsell it.
	Members []GroupMember
}

// GroupMember is one keyword of an intent group.
type GroupMember struct {
	Keyword   string
	Volume    *int64 // nil: no value (likewise CPCMicros)
	CPCMicros *int64
	// Overlap is the member's overlap with the leader (n of 20); the
	// leader's own is the number of its result URLs.
	Overlap int32
}

// GroupIndex is an Index that also holds intent groups, computed when the
// index is built.
type GroupIndex interface {
	// IntentGroup returns the group led by a normalized leader keyword in a
	// country, ErrNotFound when there is none (or the build predates
	// groups), ErrNoIndex, or an error wrapping ErrIndexDamaged.
	IntentGroup(ctx context.Context, country, leader string) (IntentGroup, error)
}

// SuggestIndex is an Index that also suggests keywords by prefix.
type SuggestIndex interface {
	// Suggest returns up to n keywords of a country that begin with the
	// normalized prefix, most searched first, then, if fewer do, keywords
	// holding it as whole words. Its cost does not grow with the index.
	Suggest(ctx context.Context, country, prefix string, n int) ([]string, error)
	// SharedPrefix returns the longest beginning of the normalized
	// keyword q, at a rune boundary, that also begins some keyword of
	// the country ("" when none does). Its cost does not grow with the
	// index either.
	SharedPrefix(ctx context.Context, country, q string) (string, error)
}
