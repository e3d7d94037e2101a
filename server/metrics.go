package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memor-db/memor"
)

// Metrics holds the measurements of one server and its engine in a
// Prometheus registry of its own (never the process-wide default, so two
// servers in one process do not mix their counts), served by a Handler
// at GET /metrics in the Prometheus text format. It is also the engine's
// memor.Observer: pass it in memor.Options.Observer when opening the
// engine to get query latencies per signal. Safe for concurrent use.
//
// # Metrics
//
//	memor_http_requests_total{route,code}          requests by route pattern and status
//	memor_http_request_duration_seconds{route}     request latency by route pattern
//	memor_query_duration_seconds{outcome}          Engine.Query latency (ok, error)
//	memor_query_stage_duration_seconds{stage}      Query per signal and stage (bm25, embed, vector, entity, ...)
//	memor_episodes_queued_total                    episodes queued by Add
//	memor_episodes_applied_total                   episodes applied (queued or inline)
//	memor_episodes_failed_total                    episodes recorded as failed
//	memor_wal_syncs_total, memor_file_syncs_total  fsyncs of the log and of other files
//	memor_index_cache_bytes, memor_index_cache_users  loaded retrieval indexes
//	memor_index_cache_evictions_total              users evicted to fit the budget
//	memor_ingested_tables_total                    bulk first writes ingested as tables
//
// A cluster node (Options.Router) adds:
//
//	memor_cluster_shards_owned                     shards this node owns and serves
//	memor_cluster_shard_lag{shard}                 per owned shard: episodes stored, not applied
//	memor_cluster_lease_renewals_total             lease renewals
//	memor_cluster_lease_renewal_failures_total     renewals refused (a lease lost, JetStream unreachable)
//	memor_cluster_shards_taken_total, memor_cluster_shards_handed_over_total
//	memor_cluster_forwards_total{outcome}          requests forwarded to the owner (ok, error)
//	memor_cluster_redirects_total                  requests answered with a redirect to the owner
//
// The route label is the pattern that served the request ("GET
// /v1/users/{user}/query"), never the path: user IDs do not become label
// values. A request answered before routing (refused by the host, origin
// or token checks, or a CORS preflight) has the route "unrouted". Go runtime and process metrics (go_*, process_*) are
// included.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	queries  [2]prometheus.Observer // ok, error
	stages   [memor.NumQueryStages]prometheus.Observer

	forwardVec *prometheus.CounterVec
	forwards   [2]prometheus.Counter // ok, error
	redirects  prometheus.Counter

	mu      sync.Mutex
	engines map[*memor.Engine]bool
	router  bool
}

// latencyBuckets span 50µs to 13s by factors of 4: a stage of a small
// user's query takes tens of microseconds, a request to an LLM seconds.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 4, 10)

// NewMetrics returns empty metrics with a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), engines: map[*memor.Engine]bool{}}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memor_http_requests_total",
		Help: "HTTP requests served, by route pattern and status code.",
	}, []string{"route", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "memor_http_request_duration_seconds",
		Help:    "HTTP request latency by route pattern.",
		Buckets: latencyBuckets,
	}, []string{"route"})
	queries := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "memor_query_duration_seconds",
		Help:    "Engine.Query latency, by outcome.",
		Buckets: latencyBuckets,
	}, []string{"outcome"})
	stages := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "memor_query_stage_duration_seconds",
		Help:    "Time of each stage of Engine.Query: each signal's candidate generation (bm25, vector, entity, outdated), the question's embedding, focus, loading and reranking.",
		Buckets: latencyBuckets,
	}, []string{"stage"})
	// Children made up front: observing one is then a lookup-free add.
	m.queries[0] = queries.WithLabelValues("ok")
	m.queries[1] = queries.WithLabelValues("error")
	for s := range memor.NumQueryStages {
		m.stages[s] = stages.WithLabelValues(s.String())
	}
	forwards := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memor_cluster_forwards_total",
		Help: "Requests for a user another node owns, forwarded to it, by outcome (error: the owner did not answer).",
	}, []string{"outcome"})
	m.forwardVec = forwards
	m.forwards[0], m.forwards[1] = forwards.WithLabelValues("ok"), forwards.WithLabelValues("error")
	m.redirects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "memor_cluster_redirects_total",
		Help: "Requests for a user another node owns, answered with a redirect to it (Memor-Redirect: true).",
	})
	m.reg.MustRegister(m.requests, m.duration, queries, stages,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the metrics' registry, for adding collectors of one's
// own to what /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveQueryStage implements memor.Observer.
func (m *Metrics) ObserveQueryStage(s memor.QueryStage, d time.Duration) {
	if s >= 0 && s < memor.NumQueryStages {
		m.stages[s].Observe(d.Seconds())
	}
}

// ObserveQuery implements memor.Observer.
func (m *Metrics) ObserveQuery(d time.Duration, err error) {
	i := 0
	if err != nil {
		i = 1
	}
	m.queries[i].Observe(d.Seconds())
}

// watch adds e's counters (read from Engine.Stats when scraped) once.
func (m *Metrics) watch(e *memor.Engine) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.engines[e] {
		return
	}
	if len(m.engines) > 0 {
		// One registry, one engine: a second would collide on every
		// name. The first stays.
		return
	}
	m.engines[e] = true
	m.reg.MustRegister(engineCollector{e})
}

// watchRouter adds the cluster metrics of rt once.
func (m *Metrics) watchRouter(rt Router) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.router {
		return
	}
	m.router = true
	m.reg.MustRegister(m.forwardVec, m.redirects, routerCollector{rt})
}

func (m *Metrics) forwarded(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.forwards[0].Inc()
	} else {
		m.forwards[1].Inc()
	}
}

func (m *Metrics) redirected() {
	if m != nil {
		m.redirects.Inc()
	}
}

// routerCollector reads a cluster node's Stats when scraped.
type routerCollector struct{ rt Router }

var (
	descShards     = prometheus.NewDesc("memor_cluster_shards_owned", "Shards this node owns and serves.", nil, nil)
	descLag        = prometheus.NewDesc("memor_cluster_shard_lag", "Per shard this node owns: episodes stored and not yet applied.", []string{"shard"}, nil)
	descRenewals   = prometheus.NewDesc("memor_cluster_lease_renewals_total", "Shard lease renewals since the node joined.", nil, nil)
	descRenewFails = prometheus.NewDesc("memor_cluster_lease_renewal_failures_total", "Shard lease renewals refused (the lease was lost, or JetStream did not answer).", nil, nil)
	descTaken      = prometheus.NewDesc("memor_cluster_shards_taken_total", "Shards this node took (at start, on failover, on rebalancing).", nil, nil)
	descHanded     = prometheus.NewDesc("memor_cluster_shards_handed_over_total", "Shards this node handed over (rebalancing, drain).", nil, nil)
)

func (routerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShards, descLag, descRenewals, descRenewFails, descTaken, descHanded} {
		ch <- d
	}
}

func (c routerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.rt.Stats(ctx)
	if err != nil && len(s.Shards) == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(descShards, prometheus.GaugeValue, float64(len(s.Shards)))
	for i, sh := range s.Shards {
		if i < len(s.Lag) {
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(s.Lag[i]), strconv.Itoa(sh))
		}
	}
	for d, v := range map[*prometheus.Desc]uint64{descRenewals: s.Renewals, descRenewFails: s.RenewFailures, descTaken: s.Taken, descHanded: s.HandedOver} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
}

// handler serves the registry in the text format (or what the scraper
// negotiates).
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// observe counts one request served by the pattern route.
func (m *Metrics) observe(route string, code int, d time.Duration) {
	if route == "" {
		route = "unrouted"
	}
	if code == 0 {
		code = http.StatusOK // nothing written: net/http sends 200
	}
	m.requests.WithLabelValues(route, codeLabel(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

func codeLabel(code int) string {
	if code < 100 || code > 999 {
		return "unknown"
	}
	b := [3]byte{byte('0' + code/100), byte('0' + code/10%10), byte('0' + code%10)}
	return string(b[:])
}

// engineCollector reads an engine's Stats when scraped.
type engineCollector struct{ e *memor.Engine }

var (
	descQueued    = prometheus.NewDesc("memor_episodes_queued_total", "Episodes queued by Add (without Sync).", nil, nil)
	descApplied   = prometheus.NewDesc("memor_episodes_applied_total", "Episodes whose facts were applied, queued or inline.", nil, nil)
	descFailed    = prometheus.NewDesc("memor_episodes_failed_total", "Episodes recorded as failed (see Engine.Failed and Retry).", nil, nil)
	descWALSyncs  = prometheus.NewDesc("memor_wal_syncs_total", "Syncs (fsync) of the write-ahead log: what durable writes wait for.", nil, nil)
	descFileSyncs = prometheus.NewDesc("memor_file_syncs_total", "Syncs (fsync) of the store's other files: flushes, compactions, the manifest.", nil, nil)
	descIdxBytes  = prometheus.NewDesc("memor_index_cache_bytes", "Estimated memory of the loaded per-user retrieval indexes.", nil, nil)
	descIdxUsers  = prometheus.NewDesc("memor_index_cache_users", "Users whose retrieval indexes are loaded.", nil, nil)
	descEvictions = prometheus.NewDesc("memor_index_cache_evictions_total", "Users whose indexes were evicted to keep the cache within its budget.", nil, nil)
	descIngested  = prometheus.NewDesc("memor_ingested_tables_total", "Large first writes of new users committed as ingested tables.", nil, nil)
	descWarmed    = prometheus.NewDesc("memor_index_cache_warmed_users_total", "Users whose indexes the warm-up after start loaded (the users cached when the store was last closed).", nil, nil)
	descWarming   = prometheus.NewDesc("memor_index_cache_warming", "1 while the index cache's warm-up after start runs.", nil, nil)
)

func (engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueued, descApplied, descFailed, descWALSyncs, descFileSyncs,
		descIdxBytes, descIdxUsers, descEvictions, descIngested, descWarmed, descWarming} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.e.Stats(ctx)
	if err != nil {
		// A closed engine (shutting down) has nothing to report; the
		// scrape still gets the request metrics.
		return
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(descQueued, s.EpisodesQueued)
	counter(descApplied, s.EpisodesApplied)
	counter(descFailed, s.EpisodesFailed)
	counter(descWALSyncs, s.WALSyncs)
	counter(descFileSyncs, s.FileSyncs)
	gauge(descIdxBytes, float64(s.IndexBytes))
	gauge(descIdxUsers, float64(s.IndexedUsers))
	counter(descEvictions, s.IndexEvictions)
	counter(descIngested, s.IngestedTables)
	counter(descWarmed, s.IndexesWarmed)
	warming := 0.0
	if s.Warming {
		warming = 1
	}
	gauge(descWarming, warming)
}
