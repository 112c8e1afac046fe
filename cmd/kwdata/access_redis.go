package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/kwdata/kwdata/serve/access"
)

// redisPasswordEnv holds the Redis password when it should not appear in
// the URL on the command line (and so in the process list).
const redisPasswordEnv = "KWDATA_REDIS_PASSWORD"

// accessFlagHelp describes --access of serve and keys.
const accessFlagHelp = "where keys and lookup counts live: empty for the embedded store in DATA/access (one server), or redis://[:PASSWORD@]HOST:6379/0 (rediss:// for TLS) shared by several servers; the password may instead come from $" + redisPasswordEnv

// checkAccessURL accepts "" (the embedded store) or a redis:// or
// rediss:// URL.
func checkAccessURL(s string) error {
	if s == "" || strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://") {
		return nil
	}
	return usageError{fmt.Errorf("--access %q is not a redis:// or rediss:// URL; write e.g. --access redis://127.0.0.1:6379/0, or leave it out for the embedded store", s)}
}

// openRedisAccess connects to the Redis access store at url.
func (m *Main) openRedisAccess(ctx context.Context, url string, opt access.Options) (*access.RedisStore, error) {
	s, err := access.OpenRedis(ctx, access.RedisOptions{URL: url, Password: m.getenv(redisPasswordEnv)}, opt)
	if err != nil {
		return nil, fmt.Errorf("cannot open the access store: %w", err)
	}
	return s, nil
}

func (m *Main) runAccess(ctx context.Context, args []string) error {
	const usage = "migrate --from DIR --to redis://HOST:6379/0"
	if len(args) > 0 && (args[0] == "migrate" || strings.HasPrefix(args[0], "-")) {
		if args[0] == "migrate" {
			args = args[1:]
		}
		return m.runAccessMigrate(ctx, args, usage)
	}
	if len(args) == 0 {
		return usageError{fmt.Errorf("access needs a subcommand: kwdata access %s", usage)}
	}
	return usageError{fmt.Errorf("unknown access subcommand %q; use kwdata access %s", args[0], usage)}
}

// runAccessMigrate is kwdata access migrate: the way from one server to
// several without resetting anyone's allowance.
func (m *Main) runAccessMigrate(ctx context.Context, args []string, usage string) error {
	fs := m.newFlagSet("access migrate", strings.TrimPrefix(usage, "migrate "))
	from := fs.String("from", "", "data folder of the stopped server whose embedded store (DIR/access) is copied (required)")
	to := fs.String("to", "", "redis:// or rediss:// URL of the shared store to copy into (required); the password may instead come from $"+redisPasswordEnv)
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"from", *from}, [2]string{"to", *to}); err != nil {
		return err
	}
	if *to == "" || checkAccessURL(*to) != nil {
		return usageError{fmt.Errorf("--to %q is not a redis:// or rediss:// URL", *to)}
	}
	if err := existingData(*from); err != nil {
		return err
	}
	dst, err := m.openRedisAccess(ctx, *to, access.Options{Logger: m.Logger, Now: m.now})
	if err != nil {
		return err
	}
	defer dst.Close()
	rep, err := access.MigrateToRedis(ctx, access.Options{Dir: accessDir(*from), Logger: m.Logger, Now: m.now}, dst)
	if err != nil {
		return fmt.Errorf("cannot migrate the access store: %w", err)
	}
	fmt.Fprintf(m.Stdout, "copied %s and %s of this period to Redis; start the servers with --access %s\n", count(rep.Keys, "key", "keys"), count(rep.Counters, "counter", "counters"), redactedURL(*to))
	return nil
}

// redactedURL drops a password from a Redis URL for messages.
func redactedURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	return scheme + "://" + rest
}
