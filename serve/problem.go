package serve

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/kwdata/kwdata/serve/web"
)

// writeError renders err as a problem document and logs what the client
// does not see.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, route string, err error) {
	var be *BodyError
	if errors.As(err, &be) {
		// The client's fault, whatever the status: counted apart from
		// server faults, logged only when asked for.
		s.metrics.bodyError(route, be.Reason)
		if r.Context().Err() != nil && be.Reason != BodyTimeout {
			// net/http cancels the context when the connection fails:
			// nobody is left to read an answer.
			s.Log.LogAttrs(r.Context(), slog.LevelDebug, "client went away while sending the body",
				slog.String("route", route), slog.Any("err", err))
			w.WriteHeader(web.StatusClientClosed)
			return
		}
		s.Log.LogAttrs(r.Context(), slog.LevelDebug, "request body unreadable",
			slog.String("route", route), slog.String("reason", be.Reason), slog.Any("err", err))
		web.WriteProblem(w, web.Classify(err))
		return
	}
	if web.IsClientGone(r.Context(), err) {
		// Nobody reads the answer; 499 (as nginx logs it) keeps such
		// requests apart from real failures in the metrics.
		s.Log.LogAttrs(r.Context(), slog.LevelDebug, "client went away",
			slog.String("route", route), slog.Any("err", err))
		w.WriteHeader(web.StatusClientClosed)
		return
	}
	he := web.Classify(err)
	switch {
	case he.Status >= 500 && !web.IndexUnavailable(err) && !errors.Is(err, ErrNotReady) && !errors.Is(err, ErrAccessUnavailable):
		s.Log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("route", route), slog.Int("status", he.Status), slog.Any("err", err))
	case he.Status >= 500:
		// Expected until the first index is published; readiness probes
		// would repeat it every few seconds, and kwdata_index_ready and the
		// 503 count already show it. A damaged index is logged once by the
		// index, naming the file, and counted in
		// kwdata_index_damaged_lookups_total; a Readier logs its own failure,
		// and so does an access store that cannot be reached.
		s.Log.LogAttrs(r.Context(), slog.LevelDebug, "request refused",
			slog.String("route", route), slog.Int("status", he.Status), slog.Any("err", err))
	}
	web.WriteProblem(w, he)
}
