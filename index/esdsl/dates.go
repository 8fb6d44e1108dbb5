package esdsl

import (
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/index"
)

// dateParser parses Elasticsearch date values: a format expression
// (index.DateFormat: names such as strict_date_optional_time, epoch_millis,
// or Java-style patterns such as yyyy-MM-dd HH:mm:ss[.SSS], joined by
// "||"), date math ("now-1d/d", "2024-01-01||+1M"), in an optional time
// zone.
type dateParser struct {
	df  *index.DateFormat
	loc *time.Location
	now time.Time
}

// epochMillisFormat parses a JSON number given for a date whatever the format.
var epochMillisFormat, _ = index.ParseDateFormat("epoch_millis")

func newDateParser(format, timeZone string, now time.Time) (*dateParser, error) {
	df, err := index.ParseDateFormat(format)
	if err != nil {
		return nil, argErr("%v", err)
	}
	loc := time.UTC
	if timeZone != "" {
		l, err := parseTimeZone(timeZone)
		if err != nil {
			return nil, err
		}
		loc = l
	}
	return &dateParser{df: df, loc: loc, now: now}, nil
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
	if t, ok := p.df.Parse(v, p.loc); ok {
		return t, nil
	}
	if isNumber {
		// A JSON number is epoch milliseconds even when the format list
		// names only patterns, as Elasticsearch does.
		if t, ok := epochMillisFormat.Parse(v, time.UTC); ok {
			return t, nil
		}
	}
	return time.Time{}, argErr("failed to parse date field [%s] with format [%s]; send a date in that format, epoch milliseconds, or set \"format\"", v, p.df)
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
