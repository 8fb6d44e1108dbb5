package index

import "errors"

// Sentinel errors. They are always wrapped with the detail of what failed;
// test with errors.Is.
var (
	// ErrInvalidMapping: a mapping definition is malformed (unknown type,
	// unknown parameter, bad analyzer). ES: mapper_parsing_exception, 400.
	ErrInvalidMapping = errors.New("invalid mapping")
	// ErrMappingConflict: an update would change an existing field's type or
	// analyzer. ES: illegal_argument_exception, 400.
	ErrMappingConflict = errors.New("mapping conflict")
	// ErrStrictDynamic: a document holds a field that is not mapped while the
	// enclosing object is "dynamic":"strict". ES: strict_dynamic_mapping_exception, 400.
	ErrStrictDynamic = errors.New("strict dynamic mapping")
	// ErrDocParse: a document is not a JSON object, or a value does not fit
	// its field's type ("abc" into a long). ES: mapper_parsing_exception / document_parsing_exception, 400.
	ErrDocParse = errors.New("document parse error")
	// ErrIllegalArgument: a value breaks a rule Elasticsearch reports as
	// illegal_argument_exception (an empty field name, a mapping parameter
	// that cannot change). 400.
	ErrIllegalArgument = errors.New("illegal argument")
	// ErrClosed: the index has been closed.
	ErrClosed = errors.New("index closed")
	// ErrStaleStats: a search under ExpectGeneration found the index's
	// contents changed since the statistics it was given were read; nothing
	// was searched.
	ErrStaleStats = errors.New("statistics are stale")
)
