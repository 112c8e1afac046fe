package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kwdata/kwdata/serve/access"
)

func (m *Main) runKeys(ctx context.Context, args []string) error {
	c, err := m.parseKeys(args)
	if err != nil || c == nil {
		return err
	}
	keys, err := m.openKeyRegistry(ctx, c)
	if err != nil {
		return err
	}
	defer keys.Close()
	switch c.sub {
	case "create":
		return m.keysCreate(ctx, keys, c)
	case "list":
		return m.keysList(ctx, keys, c)
	case "revoke":
		return m.keysRevoke(ctx, keys, c)
	default: // set-tier; parseKeys knows no other
		return m.keysSetTier(ctx, keys, c)
	}
}

// keysCommand is one kwdata keys command as parsed.
type keysCommand struct {
	sub       string
	data      string
	accessURL string
	tier      string // create's --tier
	email     string // create's --email
	paidUntil string // --paid-until as given
	until     time.Time
	pos       []string
	now       time.Time
	// where is how the messages name the store again.
	where string
}

// parseKeys reads the subcommand and its flags and checks them. A nil
// command with no error means help was asked for and printed.
func (m *Main) parseKeys(args []string) (*keysCommand, error) {
	if len(args) == 0 {
		m.keysHelp(m.Stderr)
		return nil, usageError{fmt.Errorf("keys needs a subcommand: create, list, revoke or set-tier; see 'kwdata keys -h'")}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "-h", "-help", "--help", "help":
		m.keysHelp(m.Stdout)
		return nil, nil
	}
	if _, ok := keysUsage[sub]; !ok {
		return nil, usageError{fmt.Errorf("unknown keys subcommand %q; use create, list, revoke or set-tier (see 'kwdata keys -h')", sub)}
	}
	fs := m.newFlagSet("keys "+sub, keysUsage[sub])
	data := fs.String("data", "", "data folder (required unless --access names Redis)")
	accessURL := fs.String("access", "", "redis:// or rediss:// URL of a shared access store to manage instead of DATA/access; the password may instead come from $"+redisPasswordEnv)
	var tier, email, paidUntil *string
	if sub == "create" {
		tier = fs.String("tier", "", "tier: registered or paid (required)")
		email = fs.String("email", "", "email of the key's owner; one active key per email, as POST /v1/register allows")
	}
	if sub == "create" || sub == "set-tier" {
		paidUntil = fs.String("paid-until", "", "last day of the paid subscription, YYYY-MM-DD (paid keys only; default: no end)")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, err
	}
	wantArgs := map[string]int{"create": 0, "list": 0, "revoke": 1, "set-tier": 2}[sub]
	if len(pos) != wantArgs {
		return nil, usageError{fmt.Errorf("usage: kwdata keys %s %s", sub, keysUsage[sub])}
	}
	if err := checkAccessURL(*accessURL); err != nil {
		return nil, err
	}
	c := &keysCommand{sub: sub, data: *data, accessURL: *accessURL, pos: pos, now: m.now(), where: "--data " + *data}
	if *accessURL != "" {
		c.where = "--access " + redactedURL(*accessURL)
	} else {
		if err := require([2]string{"data", *data}); err != nil {
			return nil, err
		}
		if err := existingData(*data); err != nil {
			return nil, err
		}
	}
	if tier != nil {
		c.tier, c.email = *tier, *email
	}
	if paidUntil != nil && *paidUntil != "" {
		c.paidUntil = *paidUntil
		if c.until, err = access.ParsePaidUntil(*paidUntil); err != nil {
			return nil, usageError{err}
		}
	}
	return c, nil
}

// openKeyRegistry opens the store the command names: Redis, or the
// folder's embedded registry (through the running server when there is
// one).
func (m *Main) openKeyRegistry(ctx context.Context, c *keysCommand) (keyRegistry, error) {
	if c.accessURL != "" {
		return m.openRedisAccess(ctx, c.accessURL, access.Options{Logger: m.Logger, Now: m.now})
	}
	keys, err := access.OpenKeys(access.Options{Dir: accessDir(c.data), Logger: m.Logger, Now: m.now})
	if err != nil {
		return nil, fmt.Errorf("cannot open the key registry: %w", err)
	}
	return keys, nil
}

// warnPaid says what a paid grant means when it is probably not what
// the operator meant: no end date (the key never lapses), or an end in
// the past (it lapsed already and counts as registered). Both may be
// intended (a lifetime grant, a record of an old subscription), so
// they are warnings, not refusals.
func (m *Main) warnPaid(c *keysCommand, id string) {
	switch {
	case c.until.IsZero():
		fmt.Fprintf(m.Stderr, "warning: %s is paid with no end date and stays paid until 'kwdata keys set-tier %s %s registered'; pass --paid-until YYYY-MM-DD to end it\n", id, c.where, id)
	case !c.until.After(c.now): // until is the start of the day after the last paid one
		fmt.Fprintf(m.Stderr, "warning: --paid-until %s is in the past, so %s has lapsed already and counts as registered; pass a last paid day from today on to make it paid\n", c.paidUntil, id)
	}
}

func (m *Main) keysCreate(ctx context.Context, keys keyRegistry, c *keysCommand) error {
	t, err := access.ParseTier(c.tier)
	if err != nil {
		return usageError{err}
	}
	if t != access.Paid && !c.until.IsZero() {
		return usageError{fmt.Errorf("--paid-until is for paid keys; leave it out, or pass --tier paid")}
	}
	key, rec, err := keys.CreateKey(ctx, t, c.email, c.until)
	if errors.Is(err, access.ErrEmailTaken) {
		return fmt.Errorf("cannot create the key: %s already holds an active key%s; one email holds one key, as with POST /v1/register: revoke it first, or change its tier with kwdata keys set-tier",
			c.email, activeKeyOf(ctx, keys, c.email))
	}
	if err != nil {
		return fmt.Errorf("cannot create the key: %w", err)
	}
	fmt.Fprintln(m.Stdout, key)
	fmt.Fprintf(m.Stderr, "created key %s (%s); it is shown only now, keep it safe\n", rec.ID, rec.Tier)
	if t == access.Paid {
		m.warnPaid(c, rec.ID)
	}
	return nil
}

func (m *Main) keysList(ctx context.Context, keys keyRegistry, c *keysCommand) error {
	recs, err := keys.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIER\tEMAIL\tCREATED\tLAST USED\tLOOKUPS THIS PERIOD\tPAID UNTIL\tSTATUS")
	for _, r := range recs {
		tierName := string(r.Tier)
		if r.ActiveTier(c.now) != r.Tier {
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
}

func (m *Main) keysRevoke(ctx context.Context, keys keyRegistry, c *keysCommand) error {
	id := c.pos[0]
	if err := keys.RevokeKey(ctx, id); err != nil {
		return fmt.Errorf("cannot revoke %s: %w", id, err)
	}
	fmt.Fprintf(m.Stdout, "revoked %s\n", id)
	return nil
}

func (m *Main) keysSetTier(ctx context.Context, keys keyRegistry, c *keysCommand) error {
	id := c.pos[0]
	t, err := access.ParseTier(c.pos[1])
	if err != nil {
		return usageError{err}
	}
	if t != access.Paid && !c.until.IsZero() {
		return usageError{fmt.Errorf("--paid-until is for paid keys; leave it out, or set the tier paid")}
	}
	if err := keys.SetTier(ctx, id, t, c.until); err != nil {
		return fmt.Errorf("cannot set the tier of %s: %w", id, err)
	}
	fmt.Fprintf(m.Stdout, "%s is now %s\n", id, t)
	if t == access.Paid {
		m.warnPaid(c, id)
	}
	return nil
}

var keysUsage = map[string]string{
	"create":   "--data DIR|--access redis://… --tier registered|paid [--email E] [--paid-until YYYY-MM-DD]",
	"list":     "--data DIR|--access redis://…",
	"revoke":   "--data DIR|--access redis://… ID",
	"set-tier": "--data DIR|--access redis://… ID registered|paid [--paid-until YYYY-MM-DD]",
}

// keyRegistry is what kwdata keys needs of a key store: the embedded
// *access.Keys or the shared *access.RedisStore.
type keyRegistry interface {
	CreateKey(ctx context.Context, tier access.Tier, email string, paidUntil time.Time) (string, access.KeyRecord, error)
	RevokeKey(ctx context.Context, idOrKey string) error
	SetTier(ctx context.Context, idOrKey string, tier access.Tier, paidUntil time.Time) error
	ListKeys(ctx context.Context) ([]access.KeyRecord, error)
	Close() error
}

// keysHelp prints the usage of every keys subcommand to w.
func (m *Main) keysHelp(w io.Writer) {
	fmt.Fprintln(w, "Usage:")
	for _, sub := range []string{"create", "list", "revoke", "set-tier"} {
		fmt.Fprintf(w, "  kwdata keys %-8s %s\n", sub, keysUsage[sub])
	}
	fmt.Fprintln(w, "\nkwdata keys <subcommand> -h describes its flags.")
}

// activeKeyOf names the active key of email's mailbox for a refusal, or
// says nothing when the registry cannot be read.
func activeKeyOf(ctx context.Context, keys keyRegistry, email string) string {
	recs, err := keys.ListKeys(ctx)
	if err != nil {
		return ""
	}
	norm, err := access.NormalizeEmail(email)
	if err != nil {
		return ""
	}
	for _, r := range recs {
		if access.FoldEmail(r.Email) == access.FoldEmail(norm) && !r.IsRevoked() {
			return " (" + r.ID + ")"
		}
	}
	return ""
}

// parseInterleaved parses flags that may stand before or after positional
// arguments ("revoke ID --data DIR" and "revoke --data DIR ID").
func parseInterleaved(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fs.parseErr(err)
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
