package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus series. They are registered on the
// registry given to New, never on the global one.
type metrics struct {
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	bulkDocs *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, docs func() map[string]uint64) (*metrics, error) {
	m := &metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "weft", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Latency of HTTP API requests by endpoint (route pattern) and status code.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"endpoint", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "weft", Subsystem: "http", Name: "requests_in_flight",
			Help: "HTTP API requests being served.",
		}),
		bulkDocs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weft", Subsystem: "bulk", Name: "docs_total",
			Help: "Documents received in _bulk requests, by outcome (ok or failed).",
		}, []string{"outcome"}),
	}
	cs := []prometheus.Collector{m.latency, m.inFlight, m.bulkDocs, &docsCollector{docs: docs}}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// docsCollector reports each index's document count when scraped, so the
// figure is never stale and costs nothing between scrapes.
type docsCollector struct {
	docs func() map[string]uint64
}

var docsDesc = prometheus.NewDesc("weft_index_docs", "Documents in each index.", []string{"index"}, nil)

func (c *docsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- docsDesc }

func (c *docsCollector) Collect(ch chan<- prometheus.Metric) {
	for name, n := range c.docs() {
		ch <- prometheus.MustNewConstMetric(docsDesc, prometheus.GaugeValue, float64(n), name)
	}
}
