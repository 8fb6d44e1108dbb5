package esdsl

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// dateParser parses Elasticsearch date values: formats joined by "||"
// (named formats such as strict_date_optional_time, epoch_millis,
// epoch_second, or Java-style patterns such as yyyy-MM-dd HH:mm:ss), date
// math ("now-1d/d", "2024-01-01||+1M"), in an optional time zone.
type dateParser struct {
	formats []string
	loc     *time.Location
	now     time.Time
}

const defaultDateFormat = "strict_date_optional_time||epoch_millis"

func newDateParser(format, timeZone string, now time.Time) (*dateParser, error) {
	if format == "" {
		format = defaultDateFormat
	}
	loc := time.UTC
	if timeZone != "" {
		l, err := parseTimeZone(timeZone)
		if err != nil {
			return nil, err
		}
		loc = l
	}
	return &dateParser{formats: strings.Split(format, "||"), loc: loc, now: now}, nil
}

// parseTimeZone accepts UTC/Z, fixed offsets (+01:00, -0530) and IANA names
// where the system has the zone database.
func parseTimeZone(tz string) (*time.Location, error) {
	switch tz {
	case "UTC", "Z", "utc", "GMT", "+00:00", "-00:00":
		return time.UTC, nil
	}
	if tz[0] == '+' || tz[0] == '-' {
		s := strings.ReplaceAll(tz[1:], ":", "")
		if len(s) == 2 {
			s += "00"
		}
		if len(s) == 4 {
			h, err1 := strconv.Atoi(s[:2])
			m, err2 := strconv.Atoi(s[2:])
			if err1 == nil && err2 == nil && h <= 18 && m < 60 {
				off := h*3600 + m*60
				if tz[0] == '-' {
					off = -off
				}
				return time.FixedZone(tz, off), nil
			}
		}
		return nil, argErr("time_zone [%s] is not a valid offset; use +HH:MM, -HH:MM or UTC", tz)
	}
	l, err := time.LoadLocation(tz)
	if err != nil {
		return nil, argErr("time_zone [%s] is unknown: %v; use an offset such as +01:00", tz, err)
	}
	return l, nil
}

// parse converts one date value (a JSON string or number as text) into a
// time. roundUp selects how a date-math rounding such as /d resolves: the
// last millisecond of the unit (for gt and lte) or its start (gte, lt).
func (p *dateParser) parse(v string, isNumber bool, roundUp bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, argErr("empty date value; send a date such as 2024-01-31 or epoch milliseconds")
	}
	var anchor time.Time
	math := ""
	switch {
	case strings.HasPrefix(v, "now"):
		anchor = p.now.In(p.loc)
		math = v[3:]
	case strings.Contains(v, "||"):
		i := strings.Index(v, "||")
		t, err := p.parseAbsolute(v[:i], false)
		if err != nil {
			return time.Time{}, err
		}
		anchor, math = t, v[i+2:]
	default:
		return p.parseAbsolute(v, isNumber)
	}
	return applyDateMath(anchor, math, roundUp, v)
}

func (p *dateParser) parseAbsolute(v string, isNumber bool) (time.Time, error) {
	for _, f := range p.formats {
		if t, ok := parseWithFormat(v, strings.TrimSpace(f), p.loc); ok {
			return t, nil
		}
	}
	if isNumber {
		// A JSON number is epoch milliseconds even when the format list
		// names only patterns, as Elasticsearch does.
		if t, ok := parseEpoch(v, time.Millisecond); ok {
			return t, nil
		}
	}
	return time.Time{}, argErr("failed to parse date field [%s] with format [%s]; send a date in that format, epoch milliseconds, or set \"format\"", v, strings.Join(p.formats, "||"))
}

var optionalTimeLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02T15Z07:00",
	"2006-01-02T15",
	"2006-01-02Z07:00",
	"2006-01-02",
	"2006-01",
	"2006",
}

func parseWithFormat(v, f string, loc *time.Location) (time.Time, bool) {
	switch f {
	case "epoch_millis":
		return parseEpoch(v, time.Millisecond)
	case "epoch_second":
		return parseEpoch(v, time.Second)
	case "strict_date_optional_time", "date_optional_time", "strict_date_optional_time_nanos",
		"strict_date_time", "date_time", "strict_date_time_no_millis", "date_time_no_millis",
		"strict_date", "date", "strict_year_month_day", "year_month_day", "strict_year_month",
		"year_month", "strict_year", "year", "":
		for _, l := range optionalTimeLayouts {
			if t, err := time.ParseInLocation(l, v, loc); err == nil {
				return t, true
			}
		}
		return time.Time{}, false
	case "basic_date":
		t, err := time.ParseInLocation("20060102", v, loc)
		return t, err == nil
	case "basic_date_time":
		t, err := time.ParseInLocation("20060102T150405.000Z0700", v, loc)
		return t, err == nil
	}
	layout, ok := javaLayout(f)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation(layout, v, loc)
	return t, err == nil
}

func parseEpoch(v string, unit time.Duration) (time.Time, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, false
	}
	ns := f * float64(unit)
	if ns > math.MaxInt64 || ns < math.MinInt64 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(ns)).UTC(), true
}

// javaLayout converts the common Java DateTimeFormatter letters to a Go
// layout; it reports false for patterns it cannot convert.
func javaLayout(f string) (string, bool) {
	repl := []struct{ java, goLayout string }{
		{"yyyy", "2006"}, {"uuuu", "2006"}, {"yy", "06"},
		{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"},
		{"dd", "02"}, {"HH", "15"}, {"hh", "03"}, {"mm", "04"}, {"ss", "05"},
		{"SSSSSSSSS", "000000000"}, {"SSSSSS", "000000"}, {"SSS", "000"},
		{"XXX", "Z07:00"}, {"XX", "Z0700"}, {"ZZ", "-07:00"}, {"Z", "-0700"}, {"a", "PM"},
		{"EEEE", "Monday"}, {"EEE", "Mon"},
	}
	var b strings.Builder
	for i := 0; i < len(f); {
		if f[i] == '\'' {
			j := strings.IndexByte(f[i+1:], '\'')
			if j < 0 {
				return "", false
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
			return "", false
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), true
}

// applyDateMath applies "+1d", "-2h", "/M"... to t.
func applyDateMath(t time.Time, expr string, roundUp bool, whole string) (time.Time, error) {
	for i := 0; i < len(expr); {
		op := expr[i]
		i++
		if op != '+' && op != '-' && op != '/' {
			return time.Time{}, argErr("date math [%s]: expected +, - or / at [%s]", whole, expr[i-1:])
		}
		n := 1
		if op != '/' {
			j := i
			for j < len(expr) && expr[j] >= '0' && expr[j] <= '9' {
				j++
			}
			if j > i {
				v, err := strconv.Atoi(expr[i:j])
				if err != nil || v > 1_000_000 {
					return time.Time{}, argErr("date math [%s]: amount [%s] is out of range", whole, expr[i:j])
				}
				n = v
			}
			i = j
		}
		if i >= len(expr) {
			return time.Time{}, argErr("date math [%s]: missing unit (y, M, w, d, h, H, m, s)", whole)
		}
		unit := expr[i]
		i++
		if op == '/' {
			start := truncateUnit(t, unit)
			if start.IsZero() {
				return time.Time{}, argErr("date math [%s]: unknown rounding unit [%c]; use y, M, w, d, h, H, m or s", whole, unit)
			}
			if roundUp {
				t = addUnit(start, unit, 1).Add(-time.Millisecond)
			} else {
				t = start
			}
			continue
		}
		if op == '-' {
			n = -n
		}
		nt := addUnit(t, unit, n)
		if nt.IsZero() {
			return time.Time{}, argErr("date math [%s]: unknown unit [%c]; use y, M, w, d, h, H, m or s", whole, unit)
		}
		t = nt
	}
	return t, nil
}

func addUnit(t time.Time, unit byte, n int) time.Time {
	switch unit {
	case 'y':
		return t.AddDate(n, 0, 0)
	case 'M':
		return t.AddDate(0, n, 0)
	case 'w':
		return t.AddDate(0, 0, 7*n)
	case 'd':
		return t.AddDate(0, 0, n)
	case 'h', 'H':
		return t.Add(time.Duration(n) * time.Hour)
	case 'm':
		return t.Add(time.Duration(n) * time.Minute)
	case 's':
		return t.Add(time.Duration(n) * time.Second)
	}
	return time.Time{}
}

func truncateUnit(t time.Time, unit byte) time.Time {
	y, mo, d := t.Date()
	loc := t.Location()
	switch unit {
	case 'y':
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	case 'M':
		return time.Date(y, mo, 1, 0, 0, 0, 0, loc)
	case 'w':
		wd := (int(t.Weekday()) + 6) % 7 // Monday first, as Elasticsearch
		return time.Date(y, mo, d-wd, 0, 0, 0, 0, loc)
	case 'd':
		return time.Date(y, mo, d, 0, 0, 0, 0, loc)
	case 'h', 'H':
		return time.Date(y, mo, d, t.Hour(), 0, 0, 0, loc)
	case 'm':
		return time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, loc)
	case 's':
		return time.Date(y, mo, d, t.Hour(), t.Minute(), t.Second(), 0, loc)
	}
	return time.Time{}
}

// formatDate renders t the way Elasticsearch's default date format does.
func formatDate(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// epochMillis returns t in milliseconds since the epoch.
func epochMillis(t time.Time) int64 { return t.UnixMilli() }
