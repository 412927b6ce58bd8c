package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
)

// metrics are the server's Prometheus series, in a registry of its own
// (two servers in one process do not collide).
type metrics struct {
	reg          *prometheus.Registry
	connections  prometheus.Gauge
	refused      prometheus.Counter
	authFailures prometheus.Counter
	queries      prometheus.Counter
	cancels      prometheus.Counter
	errors       *prometheus.CounterVec
	queryTime    prometheus.Histogram
	rowsSent     prometheus.Counter
	files        *prometheus.CounterVec
	metadata     prometheus.Counter
	objects      *prometheus.CounterVec
	requests     *prometheus.CounterVec
	requestTime  *prometheus.HistogramVec
	plans        prometheus.Counter
	adds         prometheus.Counter
	writes       *prometheus.CounterVec
	rowsWritten  prometheus.Counter
	compactions  *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.connections = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rocklake_pg_connections", Help: "Open PostgreSQL-protocol connections."})
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_pg_connections_refused_total", Help: "Connections refused at the connection limit."})
	m.authFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_auth_failures_total", Help: "Failed logins and rejected tokens."})
	m.queries = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_queries_total", Help: "Queries started over the PostgreSQL protocol."})
	m.cancels = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_query_cancels_total", Help: "CancelRequests that found their query."})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_query_errors_total", Help: "Statements that failed, by SQLSTATE."}, []string{"sqlstate"})
	m.queryTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rocklake_query_seconds", Help: "Time from a query's start to its last row sent.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)})
	m.rowsSent = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_rows_sent_total", Help: "Rows sent to PostgreSQL-protocol clients."})
	m.files = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_scan_files_total", Help: "Data files of queried tables: total, and kept by pruning."}, []string{"kind"})
	m.metadata = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_metadata_answers_total", Help: "Queries answered from statistics alone."})
	m.objects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_object_cache_total", Help: "Objects queries read from object storage: cache hits and fetches."}, []string{"result"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_http_requests_total", Help: "HTTP API requests, by route and status code."}, []string{"route", "code"})
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rocklake_http_request_seconds", Help: "HTTP API request time, by route.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"route"})
	m.plans = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_plans_total", Help: "Scan plans made through the HTTP API."})
	m.adds = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_files_added_total", Help: "Data files registered through the HTTP API."})
	m.writes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_writes_total", Help: "Write statements run (PostgreSQL protocol and HTTP), by statement."}, []string{"statement"})
	m.rowsWritten = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocklake_rows_written_total", Help: "Rows written by write statements."})
	m.compactions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_catalog_compactions_total", Help: "Compactions of the catalog's store (--compact-catalog-every), by result."}, []string{"result"})
	for _, c := range []prometheus.Collector{m.connections, m.refused, m.authFailures, m.queries, m.cancels, m.errors, m.queryTime,
		m.rowsSent, m.files, m.metadata, m.objects, m.requests, m.requestTime, m.plans, m.adds, m.writes, m.rowsWritten, m.compactions} {
		f(c)
	}
	return m
}

// observeQuery counts what a finished query's plans kept.
func (m *metrics) observeQuery(res *engine.Result) {
	if res.Metadata {
		m.metadata.Inc()
	}
	for _, t := range res.Tables {
		if t.Plan == nil {
			continue
		}
		m.files.WithLabelValues("total").Add(float64(t.Plan.Files.Total))
		m.files.WithLabelValues("kept").Add(float64(t.Plan.Files.Kept))
	}
	m.objects.WithLabelValues("hit").Add(float64(res.Objects.Hits))
	m.objects.WithLabelValues("fetch").Add(float64(res.Objects.Fetched))
}

// observeWrite counts a write that succeeded.
func (m *metrics) observeWrite(res *rocklake.WriteResult) {
	m.writes.WithLabelValues(res.Statement).Inc()
	m.rowsWritten.Add(float64(res.Rows))
}
