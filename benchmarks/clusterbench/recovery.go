package clusterbench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weftsearch/weft/benchmarks/fabricbench"
	"github.com/weftsearch/weft/internal/ctl"
)

// recoveryIndex is the single-shard index whose replica the recovery part
// builds; its documents' one large field is kept in _source only
// (dynamic: false), so the shard's files are mostly stored _source.
const recoveryIndex = "recovery"

var recoveryMapping = json.RawMessage(`{"dynamic":false,"properties":{"id":{"type":"keyword"}}}`)

// recoveryWait bounds one recovery, from the settings change to green.
const recoveryWait = 30 * time.Minute

// streamPoll is how often the primary's fabric counters are read during a
// recovery.
const streamPoll = 100 * time.Millisecond

// rawSizes are the fabricbench points measured between recoveries: the
// recovery's own chunk size (1 MiB, one in flight, as fabric.SendStream
// sends) and a large message.
var rawSizes = []int{1 << 20, 16 << 20}

// runRecovery loads the same synthetic documents into the recovery index
// of every three-node cluster (one per transport; the first load bounded
// by RecoveryLoadLimit, the others given as many documents), then,
// RecoveryReps times, adds a replica on each cluster in turn, measures
// the recovery and drops the replica again; after each rep it measures
// fabricbench's raw and tcp bandwidth for rawSizes and the disk's write
// rate for as many bytes as were loaded.
//
// Each transport has a cluster of its own rather than one cluster
// restarted with each: a searchnode stopped with SIGTERM and started again
// comes back with its replica-less copies deleted (see
// docs/benchmarks-cluster.md).
func runRecovery(ctx context.Context, cfg Config, logger *slog.Logger, three []*cluster) (*RecoveryResult, error) {
	res := &RecoveryResult{DocBytes: cfg.RecoveryDocBytes, Throttle: cfg.RecoveryThrottle}
	primaries := make([]*member, len(three))
	want := int((cfg.RecoveryBytes + int64(cfg.RecoveryDocBytes) - 1) / int64(cfg.RecoveryDocBytes))
	for i, cl := range three {
		if err := createIndex(ctx, cl.nodes[0].c, recoveryIndex, 1, 0, recoveryMapping); err != nil {
			return nil, err
		}
		if err := cl.waitGreen(ctx, recoveryIndex, clusterTimeout); err != nil {
			return nil, err
		}
		p, err := primaryNode(ctx, cl)
		if err != nil {
			return nil, err
		}
		primaries[i] = p
		logger.Info("clusterbench: loading the recovery index", "cluster", cl.name(), "docs", want, "doc_bytes", cfg.RecoveryDocBytes, "primary", p.name)
		start := time.Now()
		limit := cfg.RecoveryLoadLimit
		if i > 0 {
			limit = 24 * time.Hour // the same documents as the first cluster got
		}
		n, cut, err := loadSynthetic(ctx, p.c, cfg, want, limit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cl.name(), err)
		}
		if err := p.c.Refresh(ctx, recoveryIndex); err != nil {
			return nil, err
		}
		if i == 0 {
			res.Docs, res.LoadCut, want = n, cut, n
			res.LoadSeconds = time.Since(start).Seconds()
			res.SourceBytes = int64(n) * int64(cfg.RecoveryDocBytes)
		}
		logger.Info("clusterbench: recovery index loaded", "cluster", cl.name(), "docs", n, "seconds", time.Since(start).Seconds(), "cut", cut)
	}

	// The load leaves the shards' files in the page cache, to be written
	// back; the recoveries start once that is done, so that they do not
	// share the disk with the load's writeback (the raw and disk figures are
	// measured without it).
	settle := time.Now()
	syscall.Sync()
	logger.Info("clusterbench: recovery index written back", "seconds", time.Since(settle).Seconds())

	for rep := range cfg.RecoveryReps {
		for k := range three {
			i := (k + rep) % len(three)
			run, err := recoverOnce(ctx, three[i], primaries[i])
			if err != nil {
				return nil, fmt.Errorf("recovery %d on %s: %w", rep+1, three[i].name(), err)
			}
			run.Transport, run.Rep = three[i].transport, rep+1
			logger.Info("clusterbench: recovery", "transport", run.Transport, "rep", rep+1, "bytes", run.Bytes, "seconds", run.Seconds,
				"mb_per_s", run.MBPerS(), "stream_mb_per_s", run.StreamMBPerS())
			res.Runs = append(res.Runs, run)
		}
		raw, err := fabricbench.Run(ctx, fabricbench.Config{Transports: []string{"raw", "tcp"}, Sizes: rawSizes, InFlight: []int{1},
			Duration: cfg.RawDuration, MinCalls: 2}, fabricbench.NewPeer, nil)
		if err != nil {
			return nil, err
		}
		for _, r := range raw {
			if r.Error != "" {
				return nil, fmt.Errorf("fabricbench %s %d B: %s", r.Transport, r.Size, r.Error)
			}
		}
		res.Raw = append(res.Raw, raw...)
		disk, err := diskWrite(filepath.Dir(three[0].nodes[0].dir), res.SourceBytes)
		if err != nil {
			return nil, err
		}
		res.DiskMBPerS = append(res.DiskMBPerS, disk)
	}
	return res, nil
}

// diskWrite writes n bytes of random data to a new file in dir in 1 MiB
// writes, fsyncs it, removes it, and returns the rate in MB/s: what the
// disk the nodes share takes, for reading the recovery's figures (on one
// machine the primary's snapshot and the replica's files land on it).
func diskWrite(dir string, n int64) (float64, error) {
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for j := 0; j < len(buf); j += 8 {
		binary.LittleEndian.PutUint64(buf[j:], rng.Uint64())
	}
	f, err := os.CreateTemp(dir, "disk-write-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	start := time.Now()
	for done := int64(0); done < n; done += int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n-done)]); err != nil {
			_ = f.Close()
			return 0, fmt.Errorf("disk write reference: %w", err)
		}
	}
	err = f.Sync()
	elapsed := time.Since(start)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("disk write reference: %w", err)
	}
	return mbps(float64(n), elapsed.Seconds()), nil
}

// primaryNode returns the node holding the recovery index's primary.
func primaryNode(ctx context.Context, cl *cluster) (*member, error) {
	rows, _, err := cl.nodes[0].c.Shards(ctx, recoveryIndex)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.PriRep == "p" {
			if m := cl.node(r.Node); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("the primary of %s is on %q, which is not a node of this cluster", recoveryIndex, r.Node)
		}
	}
	return nil, fmt.Errorf("_cat/shards shows no primary of %s", recoveryIndex)
}

// loadSynthetic bulk-loads total documents of cfg.RecoveryDocBytes random
// base64 text (document i the same for a seed) into the recovery index
// through c (the primary's node), about 8 MiB per request, two requests in
// flight, stopping early once limit passes (then cut is true). It returns
// the documents acknowledged: with a cut, every one below that count.
func loadSynthetic(ctx context.Context, c *ctl.Client, cfg Config, total int, limit time.Duration) (docs int, cut bool, err error) {
	perReq := max(1, (8<<20)/cfg.RecoveryDocBytes)
	deadline := time.Now().Add(limit)
	var next, acked atomic.Int64
	var stopped atomic.Bool
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for {
				if time.Now().After(deadline) {
					stopped.Store(true)
					return
				}
				lo := int(next.Add(int64(perReq))) - perReq
				if lo >= total {
					return
				}
				n := min(perReq, total-lo)
				r, err := c.Bulk(ctx, recoveryIndex, syntheticBulk(cfg.Seed, lo, n, cfg.RecoveryDocBytes))
				if err == nil && r.Errors {
					err = fmt.Errorf("bulk into %s: some items failed: %+v", recoveryIndex, r.Items[0])
				}
				if err != nil {
					errs[w] = err
					return
				}
				acked.Add(int64(n))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, false, err
		}
	}
	return int(acked.Load()), stopped.Load(), nil
}

// syntheticBulk is a _bulk body indexing n documents from number lo on,
// each {"id":"big-N","blob":"<docBytes characters of base64>"}, the
// characters drawn from a generator seeded with (seed, N).
func syntheticBulk(seed uint64, lo, n, docBytes int) []byte {
	raw := make([]byte, (base64.StdEncoding.DecodedLen(docBytes)+3+7)&^7)
	text := make([]byte, base64.StdEncoding.EncodedLen(len(raw)))
	var b bytes.Buffer
	b.Grow(n * (docBytes + 80))
	for i := lo; i < lo+n; i++ {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		for j := 0; j < len(raw); j += 8 {
			binary.LittleEndian.PutUint64(raw[j:], rng.Uint64())
		}
		base64.StdEncoding.Encode(text, raw)
		id := "big-" + strconv.Itoa(i)
		fmt.Fprintf(&b, "{\"index\":{\"_id\":%q}}\n{\"id\":%q,\"blob\":\"", id, id)
		b.Write(text[:docBytes])
		b.WriteString("\"}\n")
	}
	return b.Bytes()
}

// recoveryRow is one row of GET /_cat/recovery?format=json&bytes=b.
type recoveryRow struct {
	Shard      string `json:"shard"`
	Time       string `json:"time"`
	Type       string `json:"type"`
	Stage      string `json:"stage"`
	TargetNode string `json:"target_node"`
	BytesTotal string `json:"bytes_total"`
}

// recoverOnce adds a replica to the recovery index, waits until it is
// started (green), reads its recovery, and removes the replica again.
func recoverOnce(ctx context.Context, cl *cluster, primary *member) (RecoveryRun, error) {
	c := cl.nodes[0].c
	var run RecoveryRun
	before, err := recoveries(ctx, c)
	if err != nil {
		return run, err
	}
	pctx, stopPoll := context.WithCancel(ctx)
	polled := make(chan []sample, 1)
	go func() { polled <- poll(pctx, primary.c, streamPoll) }()
	start := time.Now()
	err = setReplicas(ctx, c, recoveryIndex, 1)
	if err == nil {
		err = cl.waitGreen(ctx, recoveryIndex, recoveryWait)
	}
	run.WallSeconds = time.Since(start).Seconds()
	stopPoll()
	samples := <-polled
	if err != nil {
		return run, err
	}
	sb, sd := streamWindow(samples, 1<<20)
	run.StreamBytes, run.StreamSeconds = sb, sd.Seconds()
	after, err := recoveries(ctx, c)
	if err != nil {
		return run, err
	}
	row, err := newRecovery(before, after)
	if err != nil {
		return run, err
	}
	run.Type = row.Type
	if run.Bytes, err = strconv.ParseInt(row.BytesTotal, 10, 64); err != nil {
		return run, fmt.Errorf("_cat/recovery bytes_total %q: %w", row.BytesTotal, err)
	}
	d, err := time.ParseDuration(row.Time)
	if err != nil {
		return run, fmt.Errorf("_cat/recovery time %q: %w", row.Time, err)
	}
	run.Seconds = d.Seconds()
	if err := setReplicas(ctx, c, recoveryIndex, 0); err != nil {
		return run, err
	}
	return run, waitCopies(ctx, c, 1)
}

// recoveries lists the recovery index's recoveries, latest first.
func recoveries(ctx context.Context, c *ctl.Client) ([]recoveryRow, error) {
	var rows []recoveryRow
	data, err := c.Do(ctx, "GET", "/_cat/recovery/"+url.PathEscape(recoveryIndex), url.Values{"format": {"json"}, "bytes": {"b"}}, nil, "")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("_cat/recovery: %w", err)
	}
	return rows, nil
}

// newRecovery picks the recovery that after has and before had not (the
// latest), which must be done and file-based.
func newRecovery(before, after []recoveryRow) (recoveryRow, error) {
	if len(after) <= len(before) {
		return recoveryRow{}, fmt.Errorf("_cat/recovery lists %d recoveries after the replica started, %d before: no new one", len(after), len(before))
	}
	row := after[0]
	if row.Stage != "done" || row.Type != "peer (files)" {
		return row, fmt.Errorf("the replica's recovery is %q at stage %q, want a file-based one, done", row.Type, row.Stage)
	}
	return row, nil
}

// waitCopies waits until the recovery index has n copies in _cat/shards.
func waitCopies(ctx context.Context, c *ctl.Client, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rows, _, err := c.Shards(ctx, recoveryIndex)
		if err == nil && len(rows) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still has %d copies 2 minutes after number_of_replicas changed (want %d; last error %v)", recoveryIndex, len(rows), n, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
