// Package googleads owns kwdata's client for the Google Ads API keyword
// planning service over REST: GenerateKeywordHistoricalMetrics for the
// keyword records of the lake and GenerateKeywordIdeas to expand a seed list.
//
// The client speaks the documented REST wire format (camelCase JSON, int64
// values as JSON strings, enums by name, absent fields meaning null), signs
// requests with an OAuth2 access token minted from a refresh token, paces
// requests process-wide, honours RESOURCE_EXHAUSTED quota errors
// (retryDelay, else "Retry in N seconds", else exponential backoff), and
// checkpoints every finished batch so that a run interrupted half way
// continues on re-run without requesting finished batches again.
//
// Money is held as USD micros, as in the lake: the client reads the account's
// currency once, before its first metrics request, and converts bids and
// CPCs with Config.USDRate when the account does not bill in USD, refusing
// the account when no rate is given.
//
// A quota delay longer than Options.MaxRetryDelay (the daily operations
// bucket answers with delays of hours) stops the run with a
// *QuotaExhaustedError instead of sleeping; the checkpoint makes the next
// run resume where this one stopped.
package googleads
