package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/kwdata/kwdata/serve/access"
)

func init() {
	register("keys", "create, list, revoke and re-tier API keys (create|list|revoke|set-tier)", (*Main).runKeys)
}

func (m *Main) runKeys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("keys needs a subcommand: create, list, revoke or set-tier")}
	}
	sub, args := args[0], args[1:]
	fs := m.newFlagSet("keys "+sub, keysUsage[sub])
	data := fs.String("data", "", "data folder (required)")
	tier := fs.String("tier", "", "tier: registered or paid")
	email := fs.String("email", "", "email of the key's owner")
	paidUntil := fs.String("paid-until", "", "last day of the paid subscription, YYYY-MM-DD (default: no end)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if _, ok := keysUsage[sub]; !ok {
		return usageError{fmt.Errorf("unknown keys subcommand %q; use create, list, revoke or set-tier", sub)}
	}
	if err := require([2]string{"data", *data}); err != nil {
		return err
	}
	var until time.Time
	if *paidUntil != "" {
		if until, err = access.ParsePaidUntil(*paidUntil); err != nil {
			return usageError{err}
		}
	}
	keys, err := access.OpenKeys(access.Options{Dir: accessDir(*data), Logger: m.Logger})
	if err != nil {
		return fmt.Errorf("cannot open the key registry: %w", err)
	}
	defer keys.Close()
	wantArgs := map[string]int{"create": 0, "list": 0, "revoke": 1, "set-tier": 2}[sub]
	if len(pos) != wantArgs {
		return usageError{fmt.Errorf("usage: kwdata keys %s %s", sub, keysUsage[sub])}
	}
	switch sub {
	case "create":
		t, err := access.ParseTier(*tier)
		if err != nil {
			return usageError{err}
		}
		key, rec, err := keys.CreateKey(ctx, t, *email, until)
		if err != nil {
			return fmt.Errorf("cannot create the key: %w", err)
		}
		fmt.Fprintln(m.Stdout, key)
		fmt.Fprintf(m.Stderr, "created key %s (%s); it is shown only now, keep it safe\n", rec.ID, rec.Tier)
	case "list":
		recs, err := keys.ListKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(m.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTIER\tEMAIL\tCREATED\tLAST USED\tLOOKUPS THIS PERIOD\tPAID UNTIL\tSTATUS")
		now := time.Now()
		for _, r := range recs {
			tierName := string(r.Tier)
			if r.ActiveTier(now) != r.Tier {
				tierName += " (lapsed)"
			}
			lookups := "n/a"
			if !r.LookupsAsOf.IsZero() {
				lookups = fmt.Sprintf("%d (as of %s)", r.Lookups, r.LookupsAsOf.UTC().Format("2006-01-02 15:04:05Z"))
			}
			status := "active"
			if r.IsRevoked() {
				status = "revoked " + r.Revoked.UTC().Format("2006-01-02")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, tierName, orDash(r.Email),
				day(r.Created), day(r.LastUsed), lookups, paidDay(r.PaidUntil), status)
		}
		return tw.Flush()
	case "revoke":
		if err := keys.RevokeKey(ctx, pos[0]); err != nil {
			return fmt.Errorf("cannot revoke %s: %w", pos[0], err)
		}
		fmt.Fprintf(m.Stdout, "revoked %s\n", pos[0])
	case "set-tier":
		t, err := access.ParseTier(pos[1])
		if err != nil {
			return usageError{err}
		}
		if err := keys.SetTier(ctx, pos[0], t, until); err != nil {
			return fmt.Errorf("cannot set the tier of %s: %w", pos[0], err)
		}
		fmt.Fprintf(m.Stdout, "%s is now %s\n", pos[0], t)
	}
	return nil
}

var keysUsage = map[string]string{
	"create":   "--data DIR --tier registered|paid [--email E] [--paid-until YYYY-MM-DD]",
	"list":     "--data DIR",
	"revoke":   "--data DIR ID",
	"set-tier": "--data DIR ID registered|paid [--paid-until YYYY-MM-DD]",
}

// parseInterleaved parses flags that may stand before or after positional
// arguments ("revoke ID --data DIR" and "revoke --data DIR ID").
func parseInterleaved(fs interface {
	Parse([]string) error
	Args() []string
}, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func day(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02")
}

// paidDay shows the last paid day (the stored time is the start of the next).
func paidDay(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Add(-time.Nanosecond).Format("2006-01-02")
}
