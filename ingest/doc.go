// Package ingest owns kwdata's file ingest stage: it parses Keyword Planner
// exports and SERP JSONL files into the record types of package kw and
// writes them as the keywords and serps partitions of one country and date.
//
// The parsers (ParsePlanner, ParseSERPJSONL) are usable on their own; the
// writers (WriteKeywords, WriteSERPs) are shared with the API sources, so
// that every source sorts, deduplicates and publishes partitions the same
// way. Run ties them together for the export files of `kwdata ingest`.
//
// Sources is the ingest stage of a configured run: each country's export
// files, or its keyword list for the Google Ads API (package googleads) and
// SERPs from DataForSEO (package dataforseo) within a budget shared by the
// run's countries. The configuration file's source sections decode into
// it; Sources.Check fills their defaults and checks them, and Sources.Run
// ingests them for a date.
//
// Bad input never stops a run silently and never corrupts the lake: a bad
// row is counted and reported with its file and 1-based physical line
// number, and the run goes on; a file that is not the expected format is
// rejected whole with a message that says what was expected, and then Run
// writes nothing at all.
package ingest
