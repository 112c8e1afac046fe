package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kwdata/kwdata/serve/web"
)

// DefaultAddr is where kwdata serve and kwdata demo listen unless told
// otherwise: loopback, so a first run exposes nothing.
const DefaultAddr = "127.0.0.1:8080"

// Timeouts of Serve. Answers are small and come from a local index, so the
// limits are tight; they bound what a slow or idle client can hold.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = web.ReadTimeout
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 64 << 10
	// DrainTimeout is how long Serve waits for in-flight requests after ctx
	// is done before it closes the remaining connections.
	DrainTimeout = 20 * time.Second
)

// Serve answers HTTP on ln with h until ctx is done, then stops accepting,
// lets in-flight requests finish (up to DrainTimeout) and returns nil. It
// returns an error if serving fails or the drain times out. Requests see a
// context that carries ctx's values but is not cancelled with it, so a
// shutdown drains them instead of aborting them.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base := context.WithoutCancel(ctx)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	// The header timeout is the shortest; a connection armed that far
	// ahead needs no timer change for the next request (see lazyConn).
	go func() { errc <- srv.Serve(lazyListener{ln, ReadHeaderTimeout}) }()
	logger.LogAttrs(ctx, slog.LevelInfo, "serving HTTP", slog.String("addr", ln.Addr().String()))

	select {
	case err := <-errc:
		return fmt.Errorf("cannot serve HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	logger.LogAttrs(base, slog.LevelInfo, "shutting down HTTP", slog.Duration("drain_timeout", DrainTimeout))
	drainCtx, cancel := context.WithTimeout(base, DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		srv.Close()
		<-errc
		return fmt.Errorf("cannot drain HTTP connections within %s: %w", DrainTimeout, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cannot serve HTTP on %s: %w", ln.Addr(), err)
	}
	logger.LogAttrs(base, slog.LevelInfo, "HTTP stopped")
	return nil
}
