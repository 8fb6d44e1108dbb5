package index

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultDateFormat is Elasticsearch's default date format.
const DefaultDateFormat = "strict_date_optional_time||epoch_millis"

// DateFormat is a parsed Elasticsearch date format expression: formats
// joined by "||", each a built-in name (strict_date_optional_time,
// epoch_millis, epoch_second, basic_date, ...) or a Java-style pattern
// (yyyy-MM-dd HH:mm:ss[.SSS], with optional [..] sections and 'quoted'
// text). A value parses when any of the formats parses it. The same
// DateFormat serves indexing (this package) and queries (index/esdsl). It
// is immutable and safe for concurrent use.
type DateFormat struct {
	text  string
	parts []datePart
}

// datePart is one format of the list: Go layouts tried in order, or an
// epoch unit.
type datePart struct {
	name    string
	layouts []string
	epoch   time.Duration // >0: a number of this unit since the epoch
}

// optionalTime is strict_date_optional_time: a date with optional time and
// zone (Go's parser also accepts a fraction after the seconds).
var optionalTime = []string{
	"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02T15Z07:00", "2006-01-02T15",
	"2006-01-02Z07:00", "2006-01-02", "2006-01", "2006",
}

// namedFormats are the built-in formats Weft parses, by Go layouts.
var namedFormats = map[string][]string{
	"strict_date_optional_time":               optionalTime,
	"date_optional_time":                      optionalTime,
	"strict_date_optional_time_nanos":         optionalTime,
	"strict_date_time":                        {"2006-01-02T15:04:05.000Z07:00"},
	"date_time":                               {"2006-01-02T15:04:05.000Z07:00"},
	"strict_date_time_no_millis":              {"2006-01-02T15:04:05Z07:00"},
	"date_time_no_millis":                     {"2006-01-02T15:04:05Z07:00"},
	"strict_date":                             {"2006-01-02"},
	"date":                                    {"2006-01-02"},
	"strict_year_month_day":                   {"2006-01-02"},
	"year_month_day":                          {"2006-01-02"},
	"strict_year_month":                       {"2006-01"},
	"year_month":                              {"2006-01"},
	"strict_year":                             {"2006"},
	"year":                                    {"2006"},
	"basic_date":                              {"20060102"},
	"basic_date_time":                         {"20060102T150405.000Z0700", "20060102T150405.000Z07:00"},
	"basic_date_time_no_millis":               {"20060102T150405Z0700", "20060102T150405Z07:00"},
	"strict_date_hour_minute_second":          {"2006-01-02T15:04:05"},
	"date_hour_minute_second":                 {"2006-01-02T15:04:05"},
	"strict_date_hour_minute_second_millis":   {"2006-01-02T15:04:05.000"},
	"date_hour_minute_second_millis":          {"2006-01-02T15:04:05.000"},
	"strict_date_hour_minute_second_fraction": {"2006-01-02T15:04:05.000"},
	"date_hour_minute_second_fraction":        {"2006-01-02T15:04:05.000"},
	"strict_date_hour_minute":                 {"2006-01-02T15:04"},
	"date_hour_minute":                        {"2006-01-02T15:04"},
	"strict_hour_minute_second":               {"15:04:05"},
	"hour_minute_second":                      {"15:04:05"},
}

// ParseDateFormat parses a format expression; "" is DefaultDateFormat. An
// unknown name or a pattern with letters it cannot convert is an error
// naming it.
func ParseDateFormat(format string) (*DateFormat, error) {
	if format == "" {
		format = DefaultDateFormat
	}
	f := &DateFormat{text: format}
	for _, p := range strings.Split(format, "||") {
		p = strings.TrimSpace(p)
		part := datePart{name: p}
		switch {
		case p == "epoch_millis":
			part.epoch = time.Millisecond
		case p == "epoch_second":
			part.epoch = time.Second
		case namedFormats[p] != nil:
			part.layouts = namedFormats[p]
		default:
			layouts, err := javaLayouts(p)
			if err != nil {
				return nil, fmt.Errorf("date format [%s] is not supported: %v; use a built-in name (strict_date_optional_time, epoch_millis, epoch_second, basic_date, ...) or a pattern such as yyyy-MM-dd HH:mm:ss[.SSS]", p, err)
			}
			part.layouts = layouts
		}
		f.parts = append(f.parts, part)
	}
	return f, nil
}

// String returns the expression as given ("" given: the default).
func (f *DateFormat) String() string { return f.text }

// Parse parses v with the first format that accepts it; values without a
// zone are in loc.
func (f *DateFormat) Parse(v string, loc *time.Location) (time.Time, bool) {
	for _, p := range f.parts {
		if p.epoch > 0 {
			if t, ok := parseEpoch(v, p.epoch); ok {
				return t, true
			}
			continue
		}
		for _, l := range p.layouts {
			if t, err := time.ParseInLocation(l, v, loc); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// Layout returns how to print a date in the first format of the list:
// "epoch_millis" or "epoch_second", the Go layout of a pattern, or "" for
// a built-in name (printed as Elasticsearch's default format prints).
func (f *DateFormat) Layout() string {
	p := f.parts[0]
	switch {
	case p.epoch > 0:
		return p.name
	case namedFormats[p.name] != nil:
		return ""
	}
	return p.layouts[0]
}

// ParseEpoch reads a number of unit since the epoch (fractions allowed).
func parseEpoch(v string, unit time.Duration) (time.Time, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(v, "eE") {
		return time.Time{}, false
	}
	ns := f * float64(unit)
	if ns > math.MaxInt64 || ns < math.MinInt64 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(ns)).UTC(), true
}

// javaLayouts converts a Java DateTimeFormatter pattern to Go layouts: one
// per combination of its optional [..] sections, longest first.
func javaLayouts(pattern string) ([]string, error) {
	alts := []string{""}
	depth, start := 0, 0
	var opt []string // optional section texts at depth 1
	var fixed []string
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\'':
			j := strings.IndexByte(pattern[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed quote")
			}
			i += j + 1
		case '[':
			if depth == 0 {
				fixed = append(fixed, pattern[start:i])
				start = i + 1
			}
			depth++
		case ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ]")
			}
			if depth == 0 {
				opt = append(opt, pattern[start:i])
				fixed = append(fixed, "\x00")
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced [")
	}
	fixed = append(fixed, pattern[start:])
	k := 0
	for _, piece := range fixed {
		if piece != "\x00" {
			l, err := javaLayout(piece)
			if err != nil {
				return nil, err
			}
			for a := range alts {
				alts[a] += l
			}
			continue
		}
		inner, err := javaLayouts(opt[k])
		if err != nil {
			return nil, err
		}
		k++
		var next []string
		for _, a := range alts {
			for _, in := range inner {
				next = append(next, a+in)
			}
		}
		alts = append(next, alts...)
	}
	return alts, nil
}

// javaLayout converts one pattern without optional sections.
func javaLayout(f string) (string, error) {
	repl := []struct{ java, goLayout string }{
		{"yyyy", "2006"}, {"uuuu", "2006"}, {"yy", "06"},
		{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"}, {"M", "1"},
		{"dd", "02"}, {"d", "2"}, {"HH", "15"}, {"hh", "03"}, {"mm", "04"}, {"ss", "05"},
		{"SSSSSSSSS", "000000000"}, {"SSSSSS", "000000"}, {"SSS", "000"}, {"SS", "00"}, {"S", "0"},
		{"XXX", "Z07:00"}, {"XX", "Z0700"}, {"X", "Z07"}, {"ZZ", "-07:00"}, {"Z", "-0700"},
		{"a", "PM"}, {"EEEE", "Monday"}, {"EEE", "Mon"},
	}
	var b strings.Builder
	for i := 0; i < len(f); {
		if f[i] == '\'' {
			j := strings.IndexByte(f[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unclosed quote")
			}
			b.WriteString(f[i+1 : i+1+j])
			i += j + 2
			continue
		}
		matched := false
		for _, r := range repl {
			if strings.HasPrefix(f[i:], r.java) {
				b.WriteString(r.goLayout)
				i += len(r.java)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		c := f[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return "", fmt.Errorf("pattern letter %q is not supported", c)
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}
