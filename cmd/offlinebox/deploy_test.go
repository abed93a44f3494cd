package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/retention"
	"github.com/offlinebox/offlinebox/schemas"
)

// descRecorder registers collectors with the registry behind it and
// remembers the name and label names of every metric they describe, so
// that a vector nobody has observed yet is known too.
type descRecorder struct {
	prometheus.Registerer
	mu     sync.Mutex
	labels map[string][]string
}

var (
	descName   = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)
	descConst  = regexp.MustCompile(`constLabels: \{(.*)\}, variableLabels: \{([^}]*)\}\}$`)
	constLabel = regexp.MustCompile(`(\w+)="`)
)

func (d *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	d.mu.Lock()
	for desc := range ch {
		s := desc.String()
		m := descName.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		var labels []string
		if l := descConst.FindStringSubmatch(s); l != nil {
			for _, c := range constLabel.FindAllStringSubmatch(l[1], -1) {
				labels = append(labels, c[1])
			}
			for _, v := range strings.Split(l[2], ",") {
				if v = strings.TrimSuffix(strings.TrimPrefix(v, "c("), ")"); v != "" {
					labels = append(labels, v)
				}
			}
		}
		d.labels[m[1]] = append(d.labels[m[1]], labels...)
	}
	d.mu.Unlock()
	return d.Registerer.Register(c)
}

func (d *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedMetrics builds every component the processes run (each worker
// with its group member, the census, the API) on one registry, the way
// cmd wires them, and returns the metric names they register with their
// label names. Nothing runs: registration is what is looked at.
func exportedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	_, brokers := testenv.Kafka(t, 1, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter)
	c := &stackConfig{
		Kafka: brokers[0], Redis: testenv.RedisAddr(t), ClickHouse: testenv.ClickHouseAddr(t),
		ClickHouseDB: testenv.UniqueDatabase(t), ClickHouseUser: "default", Prefix: testenv.UniquePrefix(t),
		JWTSecret: testSecret, Partitions: 1, DriftThreshold: 1000,
	}
	p, err := open(context.Background(), c, needs{redis: true, clickhouse: true, producer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	rec := &descRecorder{Registerer: p.registry, labels: map[string][]string{}}
	p.metrics = rec
	// The Go and process collectors newRegistry added.
	rec.labels["go_goroutines"], rec.labels["process_cpu_seconds_total"] = nil, nil

	fan, closeFan, err := p.fanoutWorker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFan)
	idx, err := p.convindexWorker()
	if err != nil {
		t.Fatal(err)
	}
	hist, err := p.historyWorker()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []workerSpec{fan, idx, hist} {
		r, err := newRunner(c, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
	}
	policy := filepath.Join(t.TempDir(), "retention.yaml")
	if err := os.WriteFile(policy, []byte("defaults:\n  inbox: 30d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := retention.Load(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.usePolicies(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if _, err := p.expiryWorkers(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.censusWorker(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.apiServer(c.JWTSecret, nil); err != nil {
		t.Fatal(err)
	}
	return rec.labels
}

var (
	metricRef   = regexp.MustCompile(`\b(offlinebox_[a-zA-Z0-9_]+|go_[a-zA-Z0-9_]+|process_[a-zA-Z0-9_]+)`)
	recordedRef = regexp.MustCompile(`\bofflinebox:[a-zA-Z0-9_:]+`)
	byClause    = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	selector    = regexp.MustCompile(`\{([^}]*)\}`)
	matcher     = regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)`)
	legendLabel = regexp.MustCompile(`\{\{\s*\$?labels?\.?(\w+)\s*\}\}|\{\{(\w+)\}\}`)
)

// queries returns every PromQL expression of the dashboard and the alert
// rules, each with where it is, and the recording rules' names.
func queries(t *testing.T) (exprs map[string]string, legends map[string][]string, recorded []string) {
	t.Helper()
	exprs, legends = map[string]string{}, map[string][]string{}
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "dashboards", "offlinebox.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			where := "dashboard panel " + p.Title + " #" + string(rune('A'+i))
			exprs[where] = tg.Expr
			legends[where] = append(legends[where], tg.Legend)
		}
	}
	raw, err = os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["rule "+r.Alert+r.Record] = r.Expr
			if r.Record != "" {
				recorded = append(recorded, r.Record)
			}
		}
	}
	return exprs, legends, recorded
}

// TestDashboardAndAlertsUseOnlyExportedMetrics: every metric the Grafana
// dashboard and the alert rules query is one the processes register, and
// every label they group, filter or title by is one of its labels. A
// renamed metric or label breaks this test instead of a dashboard panel
// that silently shows nothing.
func TestDashboardAndAlertsUseOnlyExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	exprs, legends, recorded := queries(t)
	deliveryRowShown(t, exprs)
	if len(exprs) < 20 {
		t.Fatalf("found only %d queries; the dashboard or the rules were not read", len(exprs))
	}
	// Labels Prometheus adds: scrape target labels, histogram buckets,
	// the worker kind the scrape config relabels.
	extra := []string{"le", "job", "instance", "worker"}
	places := make([]string, 0, len(exprs))
	for w := range exprs {
		places = append(places, w)
	}
	sort.Strings(places)
	for _, where := range places {
		expr := exprs[where]
		var labels []string
		used := metricRef.FindAllString(expr, -1)
		for _, rr := range recordedRef.FindAllString(expr, -1) {
			if !slices.Contains(recorded, rr) {
				t.Errorf("%s: recording rule %s is not defined", where, rr)
			}
		}
		if len(used) == 0 && !recordedRef.MatchString(expr) && !strings.Contains(expr, "up{") {
			t.Errorf("%s: %q queries no offlinebox metric", where, expr)
		}
		for _, name := range used {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if _, ok := exported[name]; !ok && strings.HasSuffix(name, suffix) {
					base = strings.TrimSuffix(name, suffix)
				}
			}
			l, ok := exported[base]
			if !ok {
				t.Errorf("%s: metric %s is not exported by any process", where, name)
				continue
			}
			labels = append(labels, l...)
		}
		if len(used) == 0 || recordedRef.MatchString(expr) {
			continue // labels come from the recording rule or up
		}
		var asked []string
		for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				asked = append(asked, strings.TrimSpace(l))
			}
		}
		for _, m := range selector.FindAllStringSubmatch(expr, -1) {
			for _, l := range matcher.FindAllStringSubmatch(m[1], -1) {
				asked = append(asked, l[1])
			}
		}
		for _, lg := range legends[where] {
			for _, m := range legendLabel.FindAllStringSubmatch(lg, -1) {
				asked = append(asked, m[1]+m[2])
			}
		}
		for _, l := range asked {
			if l != "" && !slices.Contains(labels, l) && !slices.Contains(extra, l) {
				t.Errorf("%s: label %q is not a label of %v", where, l, used)
			}
		}
	}
}

// deliveryRowShown: the dashboard's Delivery row charts the
// confirmed-delivery rate, write-to-ack and push-to-ack latency, the
// pushes waiting for an ack, slow-consumer closes and the inbox backlog by
// user bucket, and the rules alert
// on the rate, the push-to-ack P99 and the closes.
func deliveryRowShown(t *testing.T, exprs map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "dashboards", "offlinebox.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	var row strings.Builder
	in := false
	for _, p := range dash.Panels {
		if p.Type == "row" {
			in = strings.HasPrefix(p.Title, "Delivery")
			continue
		}
		for _, tg := range p.Targets {
			if in {
				row.WriteString(tg.Expr + "\n")
			}
		}
	}
	for _, m := range []string{"offlinebox_delivery_confirmed_within_total", "offlinebox_delivery_confirm_seconds_bucket",
		"offlinebox_live_push_to_ack_seconds_bucket", "offlinebox_live_pending_pushes", "offlinebox_live_slow_consumer_closes_total",
		"offlinebox_inbox_backlog_messages"} {
		if !strings.Contains(row.String(), m) {
			t.Errorf("the dashboard's Delivery row does not chart %s", m)
		}
	}
	for _, a := range []string{"OfflineboxConfirmedDeliveryRateLow", "OfflineboxPushToAckP99High", "OfflineboxSlowConsumerClosesRising"} {
		if _, ok := exprs["rule "+a]; !ok {
			t.Errorf("alerts.yml has no alert %s", a)
		}
	}
}

// TestComposePinsImagesChecksHealthAndRunsWithoutASecret: every image has
// a version tag, every long-running service a healthcheck, and no
// variable is required for `docker compose` to start (or to go down).
func TestComposePinsImagesChecksHealthAndRunsWithoutASecret(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), ":?") {
		t.Error("docker-compose.yml requires a variable (${VAR:?...}): every compose command would fail without it")
	}
	var compose struct {
		Services map[string]struct {
			Image       string
			Restart     string
			Healthcheck *struct {
				Test    []string
				Disable bool
			}
		}
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prometheus", "grafana", "api", "fanout"} {
		if _, ok := compose.Services[want]; !ok {
			t.Errorf("no %s service", want)
		}
	}
	for name, s := range compose.Services {
		tag := s.Image[strings.LastIndex(s.Image, ":")+1:]
		if s.Image != "offlinebox:dev" && (!strings.Contains(s.Image, ":") || tag == "latest") {
			t.Errorf("%s: image %q is not pinned to a version", name, s.Image)
		}
		oneShot := s.Restart == "no"
		if !oneShot && (s.Healthcheck == nil || s.Healthcheck.Disable || len(s.Healthcheck.Test) == 0) {
			t.Errorf("%s: no healthcheck", name)
		}
	}
}
