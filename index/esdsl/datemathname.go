package esdsl

import (
	"strings"
	"time"

	"github.com/weftsearch/weft/index"
)

// ResolveDateMathName resolves an index or alias name written in
// Elasticsearch's date math form, "<static{date_math{format|time_zone}}>"
// — "<logs-{now/d}>" is logs-2024.03.05 on that day — against now; any
// other name is returned as it is. The format defaults to yyyy.MM.dd, the
// time zone to UTC; "\{" and "\}" are literal braces in the static text.
func ResolveDateMathName(name string, now time.Time) (string, error) {
	if len(name) < 2 || name[0] != '<' || name[len(name)-1] != '>' {
		return name, nil
	}
	in := name[1 : len(name)-1]
	var out strings.Builder
	for i := 0; i < len(in); i++ {
		switch c := in[i]; c {
		case '\\':
			if i+1 < len(in) {
				i++
				out.WriteByte(in[i])
			}
		case '}':
			return "", dateMathNameErr(name, "a '}' closes nothing")
		case '{':
			end := closingBrace(in, i)
			if end < 0 {
				return "", dateMathNameErr(name, "a '{' is never closed")
			}
			s, err := dateMathPart(in[i+1:end], now)
			if err != nil {
				return "", dateMathNameErr(name, err.Error())
			}
			out.WriteString(s)
			i = end
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}

// closingBrace finds the '}' closing the '{' at open, with one level of
// nesting (the format part).
func closingBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// dateMathPart evaluates "date_math{format|time_zone}" or "date_math".
func dateMathPart(expr string, now time.Time) (string, error) {
	format, tz := "yyyy.MM.dd", ""
	if i := strings.IndexByte(expr, '{'); i >= 0 {
		if !strings.HasSuffix(expr, "}") {
			return "", argErr("the format part must end the expression")
		}
		spec := expr[i+1 : len(expr)-1]
		expr = expr[:i]
		if f, z, ok := strings.Cut(spec, "|"); ok {
			format, tz = f, z
		} else if spec != "" {
			format = spec
		}
	}
	p, err := newDateParser("", tz, now)
	if err != nil {
		return "", err
	}
	t, err := p.parse(expr, false, false)
	if err != nil {
		return "", err
	}
	df, err := index.ParseDateFormat(format)
	if err != nil {
		return "", err
	}
	layout := df.Layout()
	if layout == "" || strings.HasPrefix(layout, "epoch_") {
		return "", argErr("date format [%s] cannot name an index; use a pattern such as yyyy.MM.dd", format)
	}
	return t.In(p.loc).Format(layout), nil
}

func dateMathNameErr(name, why string) *Error {
	return &Error{Kind: ErrInvalidRequest, Type: "illegal_argument_exception", Reason: "invalid date math expression [" + name + "]: " + strings.TrimPrefix(why, "illegal_argument_exception: ")}
}
