// Package kw is kwdata's shared vocabulary: the country table, keyword and
// URL normalization, the record types that flow between stages, the layout
// of the Parquet lake, and the Index interface that the server reads through.
//
// Every stage may import kw; kw imports no stage and no storage library
// (Parquet is package lake's, Pebble package index's), so that the
// vocabulary every stage shares is plain Go data and functions that a test
// can use without a lake or an index. The server reaches the index only
// through the Index interface declared here.
package kw
