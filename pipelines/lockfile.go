package pipelines

import "log/slog"

// LockFile takes the lock at path the way Lock takes the run lock (an
// flock(2) held until release, the holder's pid, host and start written
// in the file), for other long-lived holders of a data folder such as the
// server. It refuses with a *LockedError while another process holds the
// lock; callers that are no pipeline name the holder in their own words
// from its Holder.
func LockFile(path string, logger *slog.Logger) (release func() error, err error) {
	return lockFile(path, logger)
}
