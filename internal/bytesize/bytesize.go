// Package bytesize reads byte sizes as Elasticsearch writes them: a plain
// number of bytes, or one with a unit b, kb, mb, gb or tb (powers of 1024),
// in any case.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

var units = []struct {
	suffix string
	mult   int64
}{{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"b", 1}}

// Parse returns the bytes s stands for; negative sizes and sizes past 2^62
// are errors.
func Parse(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a byte size; use e.g. 104857600, 100mb or 1gb", s)
	}
	return n * mult, nil
}
