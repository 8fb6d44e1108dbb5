package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/google/uuid"
	"github.com/weftsearch/weft/index"
)

// IndexSettings are an index's settings. NumberOfShards is fixed at creation.
type IndexSettings struct {
	NumberOfShards   int `json:"number_of_shards"`
	NumberOfReplicas int `json:"number_of_replicas"`
}

// IndexInfo describes one index.
type IndexInfo struct {
	Name           string
	UUID           string
	Settings       IndexSettings
	Mapping        *index.Mapping // a copy; changing it changes nothing
	CreationDate   time.Time
	Health         string // "green" (no replicas wanted) or "yellow" (replicas unassigned on one node)
	DocsCount      uint64
	StoreSizeBytes int64
}

// OpType is a bulk action.
type OpType int

// Bulk actions.
const (
	OpIndex OpType = iota
	OpCreate
	OpUpdate
	OpDelete
)

// Op is one write of a Bulk. Source is the document for OpIndex/OpCreate;
// Update the partial update for OpUpdate.
type Op struct {
	Type    OpType
	Index   string
	ID      string
	Routing string
	Source  json.RawMessage
	Update  *UpdateSpec

	// IfSeqNo and IfPrimaryTerm, when set (ES if_seq_no/if_primary_term),
	// make the op fail with 409 ErrVersionConflict unless the stored
	// document has exactly this seq no and primary term.
	IfSeqNo       *uint64
	IfPrimaryTerm *uint64
}

// UpdateSpec is a partial-document update: Doc is merged into _source
// (recursively for objects). If the document is missing, DocAsUpsert
// indexes Doc, else Upsert is indexed if given, else the item fails with 404.
type UpdateSpec struct {
	Doc         json.RawMessage
	DocAsUpsert bool
	Upsert      json.RawMessage
}

// RefreshPolicy is the refresh parameter of a write. Writes are searchable
// when Bulk returns whatever the policy (see the package doc).
type RefreshPolicy int

// Refresh policies.
const (
	RefreshFalse RefreshPolicy = iota
	RefreshTrue
	RefreshWaitFor
)

// OpResult is the outcome of one Bulk item.
type OpResult struct {
	Index       string
	ID          string
	Version     int64
	SeqNo       uint64
	PrimaryTerm uint64
	Result      string // created|updated|deleted|not_found|noop ("" when Err is set)
	Status      int    // HTTP status for this item
	Err         error
}

// FieldTypes is a merged view of the mappings of several indexes.
type FieldTypes []*index.Mapping

// FieldType returns the type of path in the first mapping that maps it.
func (f FieldTypes) FieldType(p string) string {
	for _, m := range f {
		if t := m.FieldType(p); t != "" {
			return t
		}
	}
	return ""
}

// mappingFor returns the first mapping that maps p.
func (f FieldTypes) mappingFor(p string) *index.Mapping {
	for _, m := range f {
		if m.FieldType(p) != "" {
			return m
		}
	}
	return nil
}

// AnalyzeField runs the named analyzer, or the search analyzer of the field
// at path, over text and returns the terms in order.
func (f FieldTypes) AnalyzeField(p, analyzer, text string) ([]string, error) {
	m := f.mappingFor(p)
	if m == nil {
		m = index.NewDynamicMapping() // unmapped: standard analyzer
	}
	return m.Analyze(p, analyzer, text)
}

// BleveAnalyzer maps an ES analyzer name to the bleve analyzer every index
// mapping defines; false for names Weft does not support.
func (f FieldTypes) BleveAnalyzer(name string) (string, bool) {
	return index.BleveAnalyzerName(name)
}

// DateFormat returns the mapping format of the date field at path ("" for
// the default).
func (f FieldTypes) DateFormat(p string) string {
	if m := f.mappingFor(p); m != nil {
		return m.DateFormat(p)
	}
	return ""
}

// Paths returns every mapped leaf path with its type.
func (f FieldTypes) Paths() map[string]string {
	out := map[string]string{}
	for k := len(f) - 1; k >= 0; k-- {
		for p, t := range f[k].FieldPaths() {
			out[p] = t
		}
	}
	return out
}

// IndexNodeStats are one index's counters.
type IndexNodeStats struct {
	Docs           uint64
	StoreSizeBytes int64
	IndexTotal     uint64
	IndexTimeNanos uint64
	DeleteTotal    uint64
	SearchTotal    uint64
	SearchNanos    uint64
	LogFsyncs      uint64
}

// NodeStats are the node's index statistics.
type NodeStats struct {
	Indices map[string]IndexNodeStats
}

// deletedPrefix marks an index directory being removed.
const deletedPrefix = ".deleted-"

type indexMeta struct {
	Name         string          `json:"name"`
	UUID         string          `json:"uuid"`
	Settings     IndexSettings   `json:"settings"`
	Mapping      json.RawMessage `json:"mapping"`
	CreationDate time.Time       `json:"creation_date"`
}

type esIndex struct {
	meta    indexMeta
	mapping *index.Mapping
	dir     string
	shards  []*localShard

	metaMu     sync.Mutex // serializes meta writes
	savedMapV  uint64
	indexTotal atomic.Uint64
	indexNanos atomic.Uint64
	delTotal   atomic.Uint64
	srchTotal  atomic.Uint64
	srchNanos  atomic.Uint64
}

// Manager holds every index of this node. All methods are safe for
// concurrent use.
type Manager struct {
	dir    string
	cfg    Config
	logger *slog.Logger

	mu      sync.RWMutex
	indices map[string]*esIndex
	closed  bool
	writes  sync.WaitGroup // writes in flight
}

// Open reopens every index under dir (definitions persisted there) and
// replays their shard logs.
func Open(dir string, cfg Config, logger *slog.Logger) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{dir: dir, cfg: cfg, logger: logger, indices: map[string]*esIndex{}}
	root := filepath.Join(dir, "indices")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("shard: create data dir %s: %w", root, err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("shard: list %s: %w", root, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		idir := filepath.Join(root, e.Name())
		if strings.HasPrefix(e.Name(), deletedPrefix) {
			// A deletion that did not finish: finish it.
			if err := os.RemoveAll(idir); err != nil {
				logger.Warn("could not remove a deleted index's files", "dir", idir, "err", err)
			}
			continue
		}
		raw, err := os.ReadFile(filepath.Join(idir, "meta.json"))
		if errors.Is(err, os.ErrNotExist) {
			// A creation that never completed (meta.json is written last).
			logger.Warn("removing an index directory without a definition", "dir", idir)
			if err := os.RemoveAll(idir); err != nil {
				logger.Warn("could not remove an incomplete index", "dir", idir, "err", err)
			}
			continue
		}
		if err != nil {
			_ = m.Close()
			return nil, fmt.Errorf("shard: read %s: %w", idir, err)
		}
		var meta indexMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			_ = m.Close()
			return nil, fmt.Errorf("shard: index definition %s/meta.json is corrupt: %w", idir, err)
		}
		mp, err := index.ParseMapping(meta.Mapping)
		if err != nil {
			_ = m.Close()
			return nil, fmt.Errorf("shard: index %s: stored mapping: %w", meta.Name, err)
		}
		ei, err := m.openIndex(idir, meta, mp, false)
		if err != nil {
			_ = m.Close()
			return nil, err
		}
		m.indices[meta.Name] = ei
	}
	return m, nil
}

func (m *Manager) openIndex(idir string, meta indexMeta, mp *index.Mapping, create bool) (*esIndex, error) {
	ei := &esIndex{meta: meta, mapping: mp, dir: idir, savedMapV: mp.Version()}
	for n := 0; n < meta.Settings.NumberOfShards; n++ {
		s, err := openLocalShard(filepath.Join(idir, fmt.Sprint(n)), meta.Name, n, mp, create, m.cfg.LogSegmentBytes, m.logger)
		if err != nil {
			for _, o := range ei.shards {
				_ = o.close()
			}
			return nil, fmt.Errorf("shard: index %s shard %d: %w", meta.Name, n, err)
		}
		s.beforeLog = ei.saveMappingIfChanged
		ei.shards = append(ei.shards, s)
	}
	// Replay may have added dynamic fields.
	if err := ei.saveMappingIfChanged(); err != nil {
		for _, o := range ei.shards {
			_ = o.close()
		}
		return nil, err
	}
	return ei, nil
}

// saveMappingIfChanged persists the index definition when its mapping has
// changed since it was last written.
func (ei *esIndex) saveMappingIfChanged() error {
	ei.metaMu.Lock()
	defer ei.metaMu.Unlock()
	v := ei.mapping.Version()
	if v == ei.savedMapV {
		return nil
	}
	if err := ei.saveLocked(); err != nil {
		return err
	}
	ei.savedMapV = v
	return nil
}

func (ei *esIndex) saveLocked() error {
	raw, err := json.Marshal(ei.mapping)
	if err != nil {
		return err
	}
	ei.meta.Mapping = raw
	return writeFileAtomic(filepath.Join(ei.dir, "meta.json"), ei.meta)
}

func writeFileAtomic(p string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("shard: write %s: %w", tmp, err)
	}
	if _, err := f.Write(raw); err != nil {
		_ = f.Close()
		return fmt.Errorf("shard: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("shard: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("shard: rename %s: %w", tmp, err)
	}
	return syncDir(filepath.Dir(p))
}

// Close flushes the logs and closes every index; idempotent. Writes in
// flight finish first.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.writes.Wait()
	var errs []error
	for _, ei := range m.indices {
		for _, s := range ei.shards {
			if err := s.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// ValidateIndexName applies Elasticsearch's index name rules.
func ValidateIndexName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: index name must not be empty", ErrInvalidIndexName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: [%s]: must not be '.' or '..'", ErrInvalidIndexName, name)
	case strings.ToLower(name) != name:
		return fmt.Errorf("%w: [%s]: must be lowercase", ErrInvalidIndexName, name)
	case strings.ContainsAny(name, "\\/*?\"<>| ,#:"):
		return fmt.Errorf("%w: [%s]: must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?, #, :]", ErrInvalidIndexName, name)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return fmt.Errorf("%w: [%s]: must not start with '_', '-', or '+'", ErrInvalidIndexName, name)
	case len(name) > 255:
		return fmt.Errorf("%w: [%s]: index name is too long, (%d > 255)", ErrInvalidIndexName, name, len(name))
	}
	return nil
}

// CreateIndex creates an index. Zero settings take the defaults (1 shard,
// 1 replica); a nil mapping is an empty dynamic one.
func (m *Manager) CreateIndex(ctx context.Context, name string, s IndexSettings, mp *index.Mapping) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateIndexName(name); err != nil {
		return err
	}
	if s.NumberOfShards == 0 {
		s.NumberOfShards = 1
	}
	if s.NumberOfShards < 1 || s.NumberOfShards > m.cfg.MaxShards {
		return fmt.Errorf("%w: number_of_shards %d must be between 1 and %d", ErrInvalidRequest, s.NumberOfShards, m.cfg.MaxShards)
	}
	if s.NumberOfReplicas < 0 {
		return fmt.Errorf("%w: number_of_replicas %d must be >= 0", ErrInvalidRequest, s.NumberOfReplicas)
	}
	if mp == nil {
		mp = index.NewDynamicMapping()
	} else {
		mp = mp.Clone()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createLocked(name, s, mp)
}

func (m *Manager) createLocked(name string, s IndexSettings, mp *index.Mapping) error {
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.indices[name]; ok {
		return fmt.Errorf("%w: index [%s] already exists", ErrIndexExists, name)
	}
	id := uuid.New()
	meta := indexMeta{Name: name, UUID: strings.ReplaceAll(id.String(), "-", "")[:22], Settings: s, CreationDate: time.Now().UTC().Truncate(time.Millisecond)}
	idir := filepath.Join(m.dir, "indices", meta.UUID)
	if err := os.MkdirAll(idir, 0o755); err != nil {
		return fmt.Errorf("shard: create %s: %w", idir, err)
	}
	ei, err := m.openIndex(idir, meta, mp, true)
	if err != nil {
		_ = os.RemoveAll(idir)
		return err
	}
	ei.metaMu.Lock()
	err = ei.saveLocked()
	ei.savedMapV = mp.Version()
	ei.metaMu.Unlock()
	if err != nil {
		for _, sh := range ei.shards {
			_ = sh.close()
		}
		_ = os.RemoveAll(idir)
		return err
	}
	m.indices[name] = ei
	m.logger.Info("index created", "index", name, "shards", s.NumberOfShards, "replicas", s.NumberOfReplicas)
	return nil
}

// DeleteIndex deletes an index and its data.
func (m *Manager) DeleteIndex(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	ei, ok := m.indices[name]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: no such index [%s]", ErrIndexNotFound, name)
	}
	delete(m.indices, name)
	m.mu.Unlock()
	var errs []error
	for _, s := range ei.shards {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	// Rename first, so that a crash mid-removal leaves no half index that
	// the next Open would try to load.
	gone := filepath.Join(filepath.Dir(ei.dir), deletedPrefix+filepath.Base(ei.dir))
	if err := os.Rename(ei.dir, gone); err != nil {
		errs = append(errs, fmt.Errorf("shard: remove %s: %w", ei.dir, err))
	} else if err := os.RemoveAll(gone); err != nil {
		errs = append(errs, fmt.Errorf("shard: remove %s: %w", gone, err))
	}
	m.logger.Info("index deleted", "index", name)
	return errors.Join(errs...)
}

func (m *Manager) get(name string) (*esIndex, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	ei, ok := m.indices[name]
	if !ok {
		return nil, fmt.Errorf("%w: no such index [%s]", ErrIndexNotFound, name)
	}
	return ei, nil
}

func (ei *esIndex) info() IndexInfo {
	ei.metaMu.Lock()
	meta := ei.meta
	ei.metaMu.Unlock()
	inf := IndexInfo{Name: meta.Name, UUID: meta.UUID, Settings: meta.Settings, Mapping: ei.mapping.Clone(), CreationDate: meta.CreationDate, Health: "green"}
	if meta.Settings.NumberOfReplicas > 0 {
		inf.Health = "yellow"
	}
	for _, s := range ei.shards {
		st := s.idx.Stats()
		inf.DocsCount += st.DocCount
		inf.StoreSizeBytes += st.StoreSizeBytes
	}
	return inf
}

// Index describes one index.
func (m *Manager) Index(name string) (IndexInfo, error) {
	ei, err := m.get(name)
	if err != nil {
		return IndexInfo{}, err
	}
	return ei.info(), nil
}

// Indices describes every index, sorted by name.
func (m *Manager) Indices() []IndexInfo {
	m.mu.RLock()
	list := make([]*esIndex, 0, len(m.indices))
	for _, ei := range m.indices {
		list = append(list, ei)
	}
	m.mu.RUnlock()
	out := make([]IndexInfo, 0, len(list))
	for _, ei := range list {
		out = append(out, ei.info())
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// ResolveIndices expands an index expression: comma-separated names and
// wildcards ("logs-*"); "", "*" and "_all" mean every index. A concrete name
// that does not exist is ErrIndexNotFound; a wildcard may match nothing.
func (m *Manager) ResolveIndices(expr string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := map[string]bool{}
	for _, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "" || part == "_all" || part == "*":
			for n := range m.indices {
				set[n] = true
			}
		case strings.ContainsAny(part, "*?"):
			for n := range m.indices {
				if ok, err := path.Match(part, n); err == nil && ok {
					set[n] = true
				}
			}
		default:
			if _, ok := m.indices[part]; !ok {
				return nil, fmt.Errorf("%w: no such index [%s]", ErrIndexNotFound, part)
			}
			set[part] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// PutMapping merges mp into the index's mapping (new fields only; a type
// change is index.ErrMappingConflict) and persists it.
func (m *Manager) PutMapping(ctx context.Context, name string, mp *index.Mapping) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ei, err := m.get(name)
	if err != nil {
		return err
	}
	if err := ei.mapping.Merge(mp); err != nil {
		return err
	}
	return ei.saveMappingIfChanged()
}

// UpdateSettings changes number_of_replicas.
func (m *Manager) UpdateSettings(ctx context.Context, name string, replicas int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if replicas < 0 {
		return fmt.Errorf("%w: number_of_replicas %d must be >= 0", ErrInvalidRequest, replicas)
	}
	ei, err := m.get(name)
	if err != nil {
		return err
	}
	ei.metaMu.Lock()
	defer ei.metaMu.Unlock()
	old := ei.meta.Settings.NumberOfReplicas
	ei.meta.Settings.NumberOfReplicas = replicas
	if err := ei.saveLocked(); err != nil {
		ei.meta.Settings.NumberOfReplicas = old
		return err
	}
	return nil
}

// Bulk applies ops and returns one result per op, in op order. A bad item
// fails only itself (see OpResult.Status); the error is for whole-request
// failures (cancelled ctx, closed manager). Each touched shard logs its ops
// with one fsync (shared with concurrent Bulks) and indexes them as one
// batch before Bulk returns.
func (m *Manager) Bulk(ctx context.Context, ops []Op, refresh RefreshPolicy) ([]OpResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	m.writes.Add(1)
	m.mu.RUnlock()
	defer m.writes.Done()

	start := time.Now()
	results := make([]OpResult, len(ops))
	type key struct {
		ei *esIndex
		n  int
	}
	groups := map[key][]item{}
	var order []key
	for k := range ops {
		op := &ops[k]
		res := &results[k]
		res.Index, res.ID = op.Index, op.ID
		ei, err := m.indexForWrite(op)
		if err != nil {
			status := http.StatusNotFound
			switch {
			case errors.Is(err, ErrInvalidIndexName):
				status = http.StatusBadRequest
			case errors.Is(err, ErrClosed):
				return nil, err
			}
			fail(res, status, err)
			continue
		}
		autoID := false
		if op.ID == "" {
			if op.Type != OpIndex && op.Type != OpCreate {
				fail(res, http.StatusBadRequest, fmt.Errorf("%w: an id is required for update and delete", ErrInvalidRequest))
				continue
			}
			op.ID, autoID = NewID(), true
			res.ID = op.ID
		}
		if len(op.ID) > 512 {
			fail(res, http.StatusBadRequest, fmt.Errorf("%w: id [%.40s...] is too long, must be no longer than 512 bytes but was: %d", ErrInvalidRequest, op.ID, len(op.ID)))
			continue
		}
		kk := key{ei, ShardFor(op.ID, op.Routing, len(ei.shards))}
		if _, ok := groups[kk]; !ok {
			order = append(order, kk)
		}
		groups[kk] = append(groups[kk], item{op: op, res: res, autoID: autoID})
	}
	var wg sync.WaitGroup
	for _, kk := range order {
		wg.Add(1)
		go func(kk key, items []item) {
			defer wg.Done()
			sh := kk.ei.shards[kk.n]
			sh.prepare(items)
			_ = sh.write(items)
			for _, it := range items {
				switch {
				case it.res.Err != nil:
				case it.res.Result == "deleted":
					kk.ei.delTotal.Add(1)
				case it.res.Result != "noop":
					kk.ei.indexTotal.Add(1)
				}
			}
		}(kk, groups[kk])
	}
	wg.Wait()
	el := uint64(time.Since(start))
	for _, kk := range order {
		kk.ei.indexNanos.Add(el / uint64(len(order)))
	}
	_ = refresh // documents are searchable on return (package doc)
	return results, nil
}

// indexForWrite returns the op's index, creating it if allowed.
func (m *Manager) indexForWrite(op *Op) (*esIndex, error) {
	ei, err := m.get(op.Index)
	if err == nil || !errors.Is(err, ErrIndexNotFound) {
		return ei, err
	}
	if err := ValidateIndexName(op.Index); err != nil {
		return nil, err
	}
	if !m.cfg.AutoCreateIndex || op.Type == OpDelete || (op.Type == OpUpdate && (op.Update == nil || (!op.Update.DocAsUpsert && len(op.Update.Upsert) == 0))) {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ei, ok := m.indices[op.Index]; ok {
		return ei, nil
	}
	if err := m.createLocked(op.Index, IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}, index.NewDynamicMapping()); err != nil {
		if errors.Is(err, ErrIndexExists) {
			return m.indices[op.Index], nil
		}
		return nil, err
	}
	return m.indices[op.Index], nil
}

// Get returns a document (realtime).
func (m *Manager) Get(ctx context.Context, indexName, id, routing string) (index.Doc, error) {
	if err := ctx.Err(); err != nil {
		return index.Doc{}, err
	}
	ei, err := m.get(indexName)
	if err != nil {
		return index.Doc{}, err
	}
	s := ei.shards[ShardFor(id, routing, len(ei.shards))]
	d, ok, err := s.idx.Get(id)
	if err != nil {
		return index.Doc{}, err
	}
	if !ok {
		return index.Doc{}, fmt.Errorf("%w: [%s][%s]", ErrDocumentNotFound, indexName, id)
	}
	return d, nil
}

// Refresh returns once writes to the named indexes that were in flight when
// it was called are searchable (they are applied before Bulk returns).
func (m *Manager) Refresh(ctx context.Context, names []string) error {
	for _, n := range names {
		ei, err := m.get(n)
		if err != nil {
			return err
		}
		for _, s := range ei.shards {
			if err := ctx.Err(); err != nil {
				return err
			}
			s.leader.Lock()
			s.leader.Unlock() //nolint:staticcheck // waiting for the group in flight
		}
	}
	return nil
}

// Fields returns the merged mapping view of the named indexes (unknown
// names are skipped).
func (m *Manager) Fields(names []string) FieldTypes {
	var out FieldTypes
	for _, n := range names {
		if ei, err := m.get(n); err == nil {
			out = append(out, ei.mapping)
		}
	}
	return out
}

// Searchers returns the shard searchers of the named indexes.
func (m *Manager) Searchers(names []string) ([]ShardSearcher, error) {
	var out []ShardSearcher
	for _, n := range names {
		ei, err := m.get(n)
		if err != nil {
			return nil, err
		}
		for _, s := range ei.shards {
			out = append(out, &localSearcher{name: s.name, idx: s.idx})
		}
	}
	return out, nil
}

// Search runs req over every shard of the named indexes with global BM25
// statistics, so N shards rank exactly like one index. Each hit's Index is
// its ES index name; put index.SourceField in req.Fields to get _source in
// hit.Fields. A failing shard gives partial results (Status.Failed, Errors).
func (m *Manager) Search(ctx context.Context, names []string, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	start := time.Now()
	searchers, err := m.Searchers(names)
	if err != nil {
		return nil, err
	}
	res, err := SearchShards(ctx, searchers, req)
	el := uint64(time.Since(start))
	for _, n := range names {
		if ei, gerr := m.get(n); gerr == nil {
			ei.srchTotal.Add(1)
			ei.srchNanos.Add(el)
		}
	}
	return res, err
}

// SearchShards searches the given shards with global statistics: phase 1
// gathers every shard's TermStats, phase 2 searches the shards that answered
// through a bleve IndexAlias under the summed statistics. A single shard is
// searched directly (its statistics are the global ones). Failing shards
// give partial results (Status.Failed, Status.Errors); if none answers, the
// error wraps ErrAllShardsFailed and the first shard's error (a malformed
// query fails this way).
func SearchShards(ctx context.Context, searchers []ShardSearcher, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	if req == nil || req.Query == nil {
		return nil, fmt.Errorf("%w: search request has no query", ErrInvalidRequest)
	}
	if len(searchers) == 0 {
		return &bleve.SearchResult{Status: &bleve.SearchStatus{Errors: map[string]error{}}, Request: req, Hits: search.DocumentMatchCollection{}}, nil
	}
	if len(searchers) == 1 {
		// One shard: its own statistics are the global ones.
		s := searchers[0]
		res, err := s.Search(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: shard %s: %w", ErrAllShardsFailed, s.Name(), err)
		}
		if res.Status == nil {
			res.Status = &bleve.SearchStatus{}
		}
		if res.Status.Total == 0 {
			res.Status.Total, res.Status.Successful = 1, 1
		}
		return res, nil
	}
	stats := make([]*index.TermStats, len(searchers))
	errs := make([]error, len(searchers))
	var wg sync.WaitGroup
	for k, s := range searchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[k], errs[k] = s.TermStats(ctx, req.Query)
		}()
	}
	wg.Wait()
	total := &index.TermStats{}
	var live []bleve.Index
	failed := map[string]error{}
	for k, s := range searchers {
		if errs[k] != nil {
			failed[s.Name()] = errs[k]
			continue
		}
		total.Add(stats[k])
		live = append(live, aliasChild{s})
	}
	if len(live) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: shard %s: %w", ErrAllShardsFailed, searchers[0].Name(), errs[0])
	}
	var res *bleve.SearchResult
	{
		alias := bleve.NewIndexAlias(live...)
		var err error
		res, err = alias.SearchInContext(index.WithGlobalStats(ctx, total), req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %w", ErrAllShardsFailed, err)
		}
	}
	if res == nil {
		res = &bleve.SearchResult{Request: req, Hits: search.DocumentMatchCollection{}}
	}
	if res.Status == nil {
		res.Status = &bleve.SearchStatus{}
	}
	if res.Status.Total == 0 && len(live) > 0 && res.Status.Failed == 0 {
		res.Status.Total = len(live)
		res.Status.Successful = len(live)
	}
	if len(failed) > 0 {
		if res.Status.Errors == nil {
			res.Status.Errors = map[string]error{}
		}
		for n, e := range failed {
			if _, seen := res.Status.Errors[n]; !seen {
				res.Status.Errors[n] = e
				res.Status.Failed++
				res.Status.Total++
			}
		}
	}
	return res, nil
}

// Stats returns per-index counters.
func (m *Manager) Stats() NodeStats {
	m.mu.RLock()
	list := make([]*esIndex, 0, len(m.indices))
	for _, ei := range m.indices {
		list = append(list, ei)
	}
	m.mu.RUnlock()
	out := NodeStats{Indices: map[string]IndexNodeStats{}}
	for _, ei := range list {
		st := IndexNodeStats{
			IndexTotal: ei.indexTotal.Load(), IndexTimeNanos: ei.indexNanos.Load(), DeleteTotal: ei.delTotal.Load(),
			SearchTotal: ei.srchTotal.Load(), SearchNanos: ei.srchNanos.Load(),
		}
		for _, s := range ei.shards {
			is := s.idx.Stats()
			st.Docs += is.DocCount
			st.StoreSizeBytes += is.StoreSizeBytes
			st.LogFsyncs += s.log.Fsyncs()
		}
		out.Indices[ei.meta.Name] = st
	}
	return out
}
