package cli

import (
	"github.com/memor-db/memor/server"
)

// serveMetrics returns the metrics serve exports at /metrics, or nil when
// it exports none: on loopback always, beyond it only when asked
// (--metrics), since a store's counts say something of what it holds.
func serveMetrics(addr string, expose bool) *server.Metrics {
	if !server.Loopback(addr) && !expose {
		return nil
	}
	return server.NewMetrics()
}
