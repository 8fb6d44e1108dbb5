package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// Input that no handler should see: a request body that is not UTF-8 and a
// path that is not in canonical form. Index names and document ids are
// judged by the coordinator (coord.ValidateIndexName, coord.ValidateID),
// the one rule for every path they enter by.

// utf8Error refuses b, which starts on line firstLine of the request body,
// when it is not UTF-8: 400 x_content_parse_exception, its reason saying
// where as Elasticsearch's parsers do ("[line:column] Invalid UTF-8 start
// byte 0xff"; the column counts bytes). nil when b is UTF-8.
func utf8Error(b []byte, firstLine int) *apiError {
	if utf8.Valid(b) {
		return nil
	}
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	line := firstLine + bytes.Count(b[:i], []byte{'\n'})
	col := i - bytes.LastIndexByte(b[:i], '\n')
	return badRequest("x_content_parse_exception", "[%d:%d] %s", line, col, utf8Problem(b[i:]))
}

// utf8Problem describes the invalid UTF-8 sequence at the start of b.
func utf8Problem(b []byte) string {
	c := b[0]
	var n int
	lo, hi := byte(0x80), byte(0xBF) // the second byte's range
	switch {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c >= 0xE0 && c <= 0xEF:
		n = 3
		if c == 0xE0 {
			lo = 0xA0 // no overlong forms
		} else if c == 0xED {
			hi = 0x9F // no surrogates
		}
	case c >= 0xF0 && c <= 0xF4:
		n = 4
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F // nothing above U+10FFFF
		}
	default:
		// A continuation byte, or a byte no character starts with.
		return fmt.Sprintf("Invalid UTF-8 start byte 0x%02x", c)
	}
	for k := 1; k < n; k++ {
		if k >= len(b) {
			return fmt.Sprintf("Invalid UTF-8: the input ends inside a character (start byte 0x%02x)", c)
		}
		if b[k] < lo || b[k] > hi {
			return fmt.Sprintf("Invalid UTF-8 middle byte 0x%02x", b[k])
		}
		lo, hi = 0x80, 0xBF
	}
	return fmt.Sprintf("Invalid UTF-8 start byte 0x%02x", c) // not reached: b[:n] would be valid
}

// docUTF8Error refuses a document source (starting on body line
// firstLine) that is not UTF-8 as Elasticsearch refuses a document it
// cannot parse: 400 document_parsing_exception, caused by the
// x_content_parse_exception that says where.
func docUTF8Error(src []byte, firstLine int, index string) *apiError {
	xe := utf8Error(src, firstLine)
	if xe == nil {
		return nil
	}
	return &apiError{Status: http.StatusBadRequest, Type: "document_parsing_exception", Index: index,
		Reason: "failed to parse the document: " + xe.Reason, CausedBy: xe}
}

// pathError refuses a request path that is not in canonical form: one
// with a "." or ".." segment or an empty one ("//"), as written or
// percent-encoded where net/http's mux would decode and clean it. The mux
// would answer it with a redirect to the cleaned path, which an API
// client follows to an endpoint it did not name (a traversal such as
// /idx/_doc/../../_security turns a document request into another);
// Weft answers 400 in Elasticsearch's error shape instead. nil for a
// canonical path. It says nothing of the cluster, only of the path.
func pathError(r *http.Request) *apiError {
	p := r.URL.EscapedPath()
	if p == cleanPath(p) {
		return nil
	}
	return illegalArgument("invalid path [%s]: it has an empty, '.' or '..' segment; send the path in canonical form, with each index name and id percent-encoded", p)
}

// cleanPath is p as net/http's ServeMux cleans it: rooted, without "."
// and ".." segments or repeated slashes, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}
