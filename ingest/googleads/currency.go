package googleads

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kwdata/kwdata/ingest/internal/money"
	"github.com/kwdata/kwdata/ingest/internal/retry"
)

// currencyQuery is the Google Ads Query Language query that reads the
// account's currency: the keyword planning methods return bids and CPCs in
// micros of it, and nothing in their answer says which one it is.
const currencyQuery = "SELECT customer.currency_code FROM customer"

// accountCurrency is the account's currency and, when it is not USD, the
// exact rate that turns its micros into USD micros.
type accountCurrency struct {
	code string
	rate *money.Rate // nil: amounts are USD already
}

// accountCurrency asks the service once per Client for the account's
// currency and decides how to turn its amounts into USD (the lake holds
// money as USD micros). An account in another currency is refused unless
// Config.USDRate gives its rate.
func (c *Client) accountCurrency(ctx context.Context) (*accountCurrency, error) {
	// The lock is held across the request so that concurrent callers
	// ask once; they would wait for the answer anyway.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.currency != nil {
		return c.currency, nil
	}
	body, err := json.Marshal(searchRequest{Query: currencyQuery})
	if err != nil {
		return nil, fmt.Errorf("cannot encode request: %w", err)
	}
	resp, err := c.call(ctx, "/googleAds:search", body)
	if err != nil {
		return nil, fmt.Errorf("cannot read the currency of account %s: %w", c.cfg.CustomerID, err)
	}
	code, err := decodeCurrency(resp)
	if err != nil {
		return nil, err
	}
	cur := &accountCurrency{code: code}
	switch {
	case code == "USD":
		if c.cfg.USDRate != 0 && c.cfg.USDRate != 1 {
			c.log.Warn("the account bills in USD; usd_rate is not used", "usd_rate", c.cfg.USDRate)
		}
	case c.cfg.USDRate == 0:
		return nil, fmt.Errorf("google ads account %s reports amounts in %s, not USD; set googleads.usd_rate to the USD value of one %s (e.g. 1.08 for EUR) to convert them",
			c.cfg.CustomerID, code, code)
	default:
		// Exact, as in the planner import: 1.08 is 108/100 and an amount
		// is rounded once.
		rt, err := money.NewRate(c.cfg.USDRate)
		if err != nil {
			return nil, fmt.Errorf("cannot use googleads.usd_rate: %w", err)
		}
		cur.rate = &rt
		c.log.Info("converting amounts to USD", "currency", code, "usd_rate", c.cfg.USDRate)
	}
	c.currency = cur
	return cur, nil
}

// decodeCurrency reads customer.currencyCode from a GoogleAdsService.Search
// answer.
func decodeCurrency(body []byte) (string, error) {
	var r searchResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return "", fmt.Errorf("cannot decode the GoogleAdsService.Search response: %w", err)
	}
	for _, row := range r.Results {
		if code := strings.ToUpper(strings.TrimSpace(row.Customer.CurrencyCode)); code != "" {
			return code, nil
		}
	}
	return "", fmt.Errorf("the account currency query answered without customer.currencyCode: %s", retry.Snippet(body))
}

// toUSD converts the money fields of m (bids and average CPC) to USD
// micros, rounding half up, before they are mapped to a record, so that a
// CPC taken from the bid midpoint is the midpoint of USD bids, as in the
// planner import. A nil receiver or a USD account leaves m as it is.
func (a *accountCurrency) toUSD(m *keywordMetrics) error {
	if a == nil || a.rate == nil || m == nil {
		return nil
	}
	for _, v := range []*optInt64{&m.LowTopOfPageBidMicros, &m.HighTopOfPageBidMicros, &m.AverageCpcMicros} {
		if !v.Valid || v.V <= 0 {
			continue // absent, or clamped to zero by toRecord anyway
		}
		usd, ok := a.rate.Convert(v.V)
		if !ok {
			return fmt.Errorf("amount of %d %s micros does not fit in USD micros at the configured rate", v.V, a.code)
		}
		v.V = usd
	}
	return nil
}
