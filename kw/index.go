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
}

// Index answers lookups. The index package implements it; the server depends
// only on this interface.
type Index interface {
	// Lookup returns the entry of a normalized keyword in a country (upper
	// case), ErrNotFound, or ErrNoIndex.
	Lookup(ctx context.Context, country, keyword string) (Entry, error)
	// Info describes the served index; ok is false while none is loaded.
	Info() (info IndexInfo, ok bool)
}
