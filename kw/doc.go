// Package kw is kwdata's shared vocabulary: the country table, keyword and
// URL normalization, the record types that flow between stages, the layout
// of the Parquet lake, and the Index interface that the server reads through.
//
// Every stage may import kw; kw imports no stage and no storage library, so
// the server binary can depend on it without dragging in Parquet or Pebble.
package kw
