// Package index owns kwdata's keyword index: it compiles one data date of
// the Parquet lake into an immutable Pebble directory under <data>/index/,
// publishes it by renaming one pointer file, and serves lookups from the
// published build through kw.Index, switching to a newly published build
// without failing a request in flight.
//
// It owns every Pebble database of the index (serve/access keeps its
// counters in a Pebble store of its own), and it owns the index folder's
// layout: other packages ask it (Published, ListBuilds, ReadManifest,
// Unfinished) rather than read the folder themselves. The on-disk
// contract:
//
//	<data>/index/CURRENT            the published build id and a newline
//	<data>/index/<build-id>/        one complete build (never changed again)
//	    manifest.json               Manifest: format version, data date, counts, probe keys
//	    db/                         the Pebble database (read-only once published)
//	<data>/index/.building-<id>/    a build in progress, renamed to <id> when complete
//
// A key is the upper-case country code, a 0x00 byte and the normalized
// keyword; its value is EncodeEntry's versioned binary encoding.
package index
