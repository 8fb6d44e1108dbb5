package index

import (
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Indexing of the field types that are not plain terms or values: ip,
// completion and the range types.

// toIP reads an ip field's value: an IPv4 or IPv6 address, kept in its
// canonical form (IPv4-mapped IPv6 addresses become IPv4, as in
// Elasticsearch).
func toIP(v any) (netip.Addr, error) {
	s, ok := v.(string)
	if !ok {
		return netip.Addr{}, fmt.Errorf("expected an IP address string")
	}
	return ParseIP(s)
}

// ParseIP parses an IP address as an ip field holds it.
func ParseIP(s string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("'%s' is not an IP string literal", s)
	}
	return addr.Unmap(), nil
}

// ipv4Value is an IPv4 address as a 32-bit number.
func ipv4Value(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// IPv4Range returns the 32-bit bounds of an IPv4 address or CIDR block
// ("10.0.0.0/8"); ok is false for IPv6.
func IPv4Range(s string) (lo, hi float64, ok bool, err error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return 0, 0, false, fmt.Errorf("'%s' is not a CIDR block", s)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()).Masked()
		if !p.Addr().Is4() {
			return 0, 0, false, nil
		}
		base := ipv4Value(p.Addr())
		size := uint64(1) << (32 - p.Bits())
		return float64(base), float64(uint64(base) + size - 1), true, nil
	}
	a, err := ParseIP(s)
	if err != nil {
		return 0, 0, false, err
	}
	if !a.Is4() {
		return 0, 0, false, nil
	}
	v := float64(ipv4Value(a))
	return v, v, true, nil
}

// completionInputs reads a completion field's value: a string, or
// {"input": string or [strings], "weight": n, "contexts": ...}.
func completionInputs(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case map[string]any:
		var out []string
		switch in := x["input"].(type) {
		case string:
			out = append(out, in)
		case []any:
			for _, e := range in {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("completion input must be a string or a list of strings")
				}
				out = append(out, s)
			}
		default:
			return nil, fmt.Errorf("completion object needs [input]")
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a string or an object with [input]")
}

// rangeValue indexes one value of a range field: the object's bounds
// (gt, gte, lt, lte; a missing one is open) as inclusive lower and upper
// bounds, and for ip_range also a CIDR string.
func (b *docBuilder) rangeValue(f *Field, path string, val any, ap []uint64) error {
	lo, hi, err := rangeBounds(f, val)
	if err != nil {
		return b.parseErr(f, path, val, err.Error())
	}
	if f.NoIndex {
		return nil
	}
	loName, hiName := RangeBounds(path)
	if f.Type == TypeDateRange {
		for _, e := range []struct {
			name string
			v    float64
		}{{loName, lo}, {hiName, hi}} {
			df, err := document.NewDateTimeFieldWithIndexingOptions(e.name, ap, time.Unix(0, int64(e.v)).UTC(), time.RFC3339Nano, valueOpts)
			if err != nil {
				return b.parseErr(f, path, val, err.Error())
			}
			b.doc.AddField(df)
		}
		return nil
	}
	b.doc.AddField(document.NewNumericFieldWithIndexingOptions(loName, ap, lo, valueOpts))
	b.doc.AddField(document.NewNumericFieldWithIndexingOptions(hiName, ap, hi, valueOpts))
	return nil
}

// rangeBounds returns a range value's inclusive bounds as numbers (dates
// in Unix nanoseconds); an exclusive bound moves to the next value the
// type holds, as Elasticsearch stores it.
func rangeBounds(f *Field, val any) (float64, float64, error) {
	if s, ok := val.(string); ok && f.Type == TypeIPRange {
		lo, hi, v4, err := IPv4Range(s)
		if err != nil {
			return 0, 0, err
		}
		if !v4 {
			return 0, 0, fmt.Errorf("IPv6 ranges are not supported")
		}
		return lo, hi, nil
	}
	obj, ok := val.(map[string]any)
	if !ok {
		return 0, 0, fmt.Errorf("expected an object with gt, gte, lt or lte")
	}
	lo, hi := rangeMin(f.Type), rangeMax(f.Type)
	for k, v := range obj {
		if v == nil {
			continue
		}
		n, err := rangeNumber(f, v)
		if err != nil {
			return 0, 0, err
		}
		switch k {
		case "gte", "from":
			lo = n
		case "gt":
			lo = rangeStep(f.Type, n, +1)
		case "lte", "to":
			hi = n
		case "lt":
			hi = rangeStep(f.Type, n, -1)
		default:
			return 0, 0, fmt.Errorf("unknown range bound [%s]; use gt, gte, lt or lte", k)
		}
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("min value (%v) is greater than max value (%v)", lo, hi)
	}
	return lo, hi, nil
}

// rangeNumber reads one bound.
func rangeNumber(f *Field, v any) (float64, error) {
	switch f.Type {
	case TypeDateRange:
		t, err := toDate(f, v)
		if err != nil {
			return 0, err
		}
		if t.Before(query.MinRFC3339CompatibleTime) || t.After(query.MaxRFC3339CompatibleTime) {
			return 0, fmt.Errorf("date is outside the supported range 1677-12-01 to 2262-04-11")
		}
		return float64(t.UnixNano()), nil
	case TypeIPRange:
		s, _ := v.(string)
		lo, _, v4, err := IPv4Range(s)
		if err != nil {
			return 0, err
		}
		if !v4 {
			return 0, fmt.Errorf("IPv6 ranges are not supported")
		}
		return lo, nil
	}
	typ := TypeDouble
	switch f.Type {
	case TypeIntegerRange:
		typ = TypeInteger
	case TypeLongRange:
		typ = TypeLong
	case TypeFloatRange:
		typ = TypeFloat
	}
	return toNumber(typ, v)
}

// rangeMin and rangeMax are the open bounds of each range type.
func rangeMin(t string) float64 {
	switch t {
	case TypeIntegerRange:
		return math.MinInt32
	case TypeLongRange:
		return math.MinInt64
	case TypeIPRange:
		return 0
	case TypeDateRange:
		return float64(query.MinRFC3339CompatibleTime.UnixNano())
	}
	return -math.MaxFloat64
}

func rangeMax(t string) float64 {
	switch t {
	case TypeIntegerRange:
		return math.MaxInt32
	case TypeLongRange:
		return math.MaxInt64
	case TypeIPRange:
		return math.MaxUint32
	case TypeDateRange:
		return float64(query.MaxRFC3339CompatibleTime.UnixNano())
	}
	return math.MaxFloat64
}

// rangeStep moves n one step up (dir +1) or down for an exclusive bound.
func rangeStep(t string, n float64, dir int) float64 {
	switch t {
	case TypeIntegerRange, TypeLongRange, TypeIPRange:
		return n + float64(dir)
	case TypeDateRange:
		return n + float64(dir)*float64(time.Millisecond)
	}
	return math.Nextafter(n, float64(dir)*math.Inf(1))
}
