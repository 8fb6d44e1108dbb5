package vocab

import (
	"encoding/json"

	"github.com/weftsearch/weft/index"
)

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

	// RequireAlias: Index must be an alias (ES require_alias); a write
	// to anything else fails rather than creating an index.
	RequireAlias bool

	// Version and VersionType: with an external version type the write
	// carries its own version (ES version/version_type=external|
	// external_gte), which must be above (or, for external_gte, at least)
	// the stored document's, and becomes the document's version.
	Version     int64
	VersionType VersionType
}

// OpOverhead is what one write costs a node in memory on its way through
// it, beyond its own bytes (Op.Bytes): the structures that carry it from
// the parsed request to the rendered reply (the parsed bulk action, the
// Op, its OpResult and the coordinator's and the primary's records of it,
// the reply item and its rendering). Measured at about 1,250 bytes of heap
// in use per tiny delete at the peak of a bulk of 100,000 of them, garbage
// not yet collected included (httpapi's bulk memory test); indexing
// pressure charges each op this much on top of its bytes, so that a bulk of
// many tiny ops is bounded by what it costs, not by its size on the wire.
const OpOverhead = 1024

// Bytes is what op is charged in indexing pressure: OpOverhead and the
// bytes it carries (id, routing, document, update).
func (op *Op) Bytes() int64 {
	n := OpOverhead + len(op.Index) + len(op.ID) + len(op.Routing) + len(op.Source)
	if u := op.Update; u != nil {
		n += len(u.Doc) + len(u.Upsert)
	}
	return int64(n)
}

// VersionType is how an Op's Version is checked.
type VersionType uint8

// Version types (Elasticsearch's, less internal versioning with a given
// version, which Elasticsearch 8 refuses in favour of if_seq_no).
const (
	// VersionInternal: the primary numbers versions itself.
	VersionInternal VersionType = iota
	// VersionExternal: Version must be greater than the stored one.
	VersionExternal
	// VersionExternalGTE: Version must be at least the stored one.
	VersionExternalGTE
)

// UpdateSpec is a partial-document update: Doc is merged into _source
// (recursively for objects). If the document is missing, DocAsUpsert
// indexes Doc, else Upsert is indexed if given, else the item fails with 404.
type UpdateSpec struct {
	Doc         json.RawMessage
	DocAsUpsert bool
	Upsert      json.RawMessage
	// NoDetectNoop (ES detect_noop false): an update that changes nothing
	// is written anyway (a new version), not answered "noop".
	NoDetectNoop bool
}

// OpResult is the outcome of one Bulk item.
type OpResult struct {
	Index       string
	ID          string
	Version     int64
	SeqNo       uint64
	PrimaryTerm uint64
	Result      string // created|updated|deleted|not_found|noop ("" when Err is set)
	// Copies is how many copies of the shard hold the write: the primary
	// and every replica that acknowledged it (0 when Err is set, or for a
	// noop).
	Copies int
	Err    error
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

// Stored reports whether the first mapping that maps p stores it
// (store: true).
func (f FieldTypes) Stored(p string) bool {
	if m := f.mappingFor(p); m != nil {
		return m.Stored(p)
	}
	return false
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

// Fail records that the item failed with err. The error says what kind of
// failure it was through the sentinel it wraps (ErrVersionConflict,
// index.ErrDocParse, ErrUnavailable, ...): the HTTP API decides the status
// from it.
func (res *OpResult) Fail(err error) {
	res.Err, res.Result = err, ""
}
