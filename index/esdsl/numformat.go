package esdsl

import (
	"math"
	"strconv"
	"strings"
)

// decimalFormat prints f with a Java DecimalFormat pattern as Elasticsearch's
// "format" on numeric aggregations takes it: literal text around a number
// pattern of '#' and '0' digits, an optional ',' for grouping and '.' for
// the fraction ("Value is ##0.0", "#,##0.00", "0.###"). Rounding is
// half-even, DecimalFormat's default. A pattern without digits prints the
// number as Java's Double.toString would.
func decimalFormat(pattern string, f float64) string {
	first := strings.IndexAny(pattern, "#0,.")
	if first < 0 {
		return javaDouble(f)
	}
	last := strings.LastIndexAny(pattern, "#0,.")
	prefix, core, suffix := pattern[:first], pattern[first:last+1], pattern[last+1:]
	intPart, fracPart, _ := strings.Cut(core, ".")
	minInt := strings.Count(intPart, "0")
	minFrac := strings.Count(fracPart, "0")
	maxFrac := minFrac + strings.Count(fracPart, "#")
	group := 0
	if i := strings.LastIndexByte(intPart, ','); i >= 0 {
		group = len(intPart) - i - 1
	}
	neg := f < 0 || (f == 0 && math.Signbit(f))
	f = math.Abs(f)
	scale := math.Pow(10, float64(maxFrac))
	f = math.RoundToEven(f*scale) / scale
	s := strconv.FormatFloat(f, 'f', maxFrac, 64)
	ip, fp, _ := strings.Cut(s, ".")
	for len(fp) > minFrac && strings.HasSuffix(fp, "0") {
		fp = fp[:len(fp)-1]
	}
	ip = strings.TrimLeft(ip, "0")
	for len(ip) < minInt {
		ip = "0" + ip
	}
	if group > 0 {
		var b strings.Builder
		for k, c := range ip {
			if k > 0 && (len(ip)-k)%group == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		ip = b.String()
	}
	num := ip
	if fp != "" {
		num += "." + fp
	}
	if neg && strings.Trim(num, "0.,") != "" {
		num = "-" + num
	}
	return prefix + num + suffix
}
