package dashboard

import (
	"net/http"

	"anet.dev/anet/pkg/metrics"
)

// metricsHandler serves the node's metrics to a scraper that sends the token of
// dashboard.metrics_token_file as a bearer token (pkg/metrics' one check: the file read at
// every request, so a rotated token or a reloaded setting needs no restart). No session and no
// cookie opens it: a scraper has none, and a browser's session must not open a door meant for
// a token. The Host check has run already.
func (s *Server) metricsHandler() http.Handler {
	if s.o.Metrics == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.fail(w, http.StatusNotFound, "Not found", "This node serves no metrics.")
		})
	}
	return metrics.ProtectFile(s.o.Metrics, func() string { return *s.tokFile.Load() })
}
