package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// Email is one converted message: the document written to the NDJSON output.
// Fields that the message lacks (or that cannot be parsed, such as a broken
// Date header) are omitted rather than written empty, so dynamic mapping
// infers a type only from real values.
type Email struct {
	ID        string `json:"id"`
	Group     string `json:"group"`
	Label     string `json:"label"`
	Subject   string `json:"subject,omitempty"`
	From      string `json:"from,omitempty"`
	To        string `json:"to,omitempty"`
	Date      string `json:"date,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Body      string `json:"body"`
}

// errNoMessage reports raw text that does not hold an RFC 5322 message.
var errNoMessage = errors.New("not an RFC 5322 message")

// maxPartDepth bounds multipart nesting, so a hostile message cannot recurse
// without end.
const maxPartDepth = 8

// wordDecoder decodes RFC 2047 encoded words in any charset that
// x/net/html/charset knows.
var wordDecoder = &mime.WordDecoder{CharsetReader: charset.NewReaderLabel}

// parseEmail converts the raw text of one message (mbox "From " line
// allowed) into an Email. maxBody > 0 truncates the body to at most that many
// bytes, on a rune boundary. The caller sets ID, Group and Label.
func parseEmail(raw string, maxBody int) (Email, error) {
	// The corpus keeps the mbox separator line; net/mail wants headers first.
	if strings.HasPrefix(raw, "From ") {
		if i := strings.IndexByte(raw, '\n'); i >= 0 {
			raw = raw[i+1:]
		}
	}
	msg, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		return Email{}, fmt.Errorf("%w: %v", errNoMessage, err)
	}
	e := Email{
		Subject:   cleanSpace(decodeHeader(msg.Header.Get("Subject"))),
		From:      cleanSpace(decodeHeader(msg.Header.Get("From"))),
		To:        cleanSpace(decodeHeader(msg.Header.Get("To"))),
		MessageID: strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>"),
	}
	if d, err := mail.ParseDate(msg.Header.Get("Date")); err == nil && d.Year() > 1970 && d.Year() < 2100 {
		e.Date = d.UTC().Format(time.RFC3339)
	}
	body, err := io.ReadAll(msg.Body)
	if err != nil {
		return Email{}, fmt.Errorf("read body: %w", err)
	}
	text := extractText(headerOf(msg.Header), body, 0)
	e.Body = truncate(cleanBody(text), maxBody)
	return e, nil
}

// headerOf adapts mail.Header to the three headers extractText needs.
func headerOf(h mail.Header) partHeader {
	return partHeader{
		contentType: h.Get("Content-Type"),
		encoding:    h.Get("Content-Transfer-Encoding"),
	}
}

type partHeader struct{ contentType, encoding string }

// extractText returns the readable text of a MIME entity: text/plain as is,
// text/html without markup, multipart/alternative its best part (plain
// preferred), other multiparts their text parts joined; anything else (images,
// attachments) contributes nothing. Undecodable content falls back to the raw
// bytes as UTF-8, never an error: a sample corpus wants text, not rejection.
func extractText(h partHeader, body []byte, depth int) string {
	mediaType, params, err := mime.ParseMediaType(h.contentType)
	if err != nil || h.contentType == "" {
		mediaType, params = "text/plain", map[string]string{}
	}
	if strings.HasPrefix(mediaType, "multipart/") && depth < maxPartDepth {
		if b := params["boundary"]; b != "" {
			return extractMultipart(mediaType, b, body, depth)
		}
	}
	if !strings.HasPrefix(mediaType, "text/") {
		return ""
	}
	decoded := decodeTransfer(h.encoding, body)
	text := toUTF8(decoded, params["charset"])
	if mediaType == "text/html" {
		return htmlText(text)
	}
	return text
}

func extractMultipart(mediaType, boundary string, body []byte, depth int) string {
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var plain, other []string
	for {
		p, err := r.NextRawPart()
		if err != nil {
			break // io.EOF or a broken part: keep what was read
		}
		// A message cut short (no closing boundary) ends its last part with
		// io.ErrUnexpectedEOF; keep what was read of it, then stop.
		pb, readErr := io.ReadAll(p)
		ph := partHeader{contentType: p.Header.Get("Content-Type"), encoding: p.Header.Get("Content-Transfer-Encoding")}
		disp, _, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		if t := strings.TrimSpace(extractText(ph, pb, depth+1)); t != "" && disp != "attachment" {
			if pt, _, _ := mime.ParseMediaType(ph.contentType); pt == "text/plain" || ph.contentType == "" {
				plain = append(plain, t)
			} else {
				other = append(other, t)
			}
		}
		if readErr != nil {
			break
		}
	}
	if mediaType == "multipart/alternative" {
		if len(plain) > 0 {
			return plain[0]
		}
		if len(other) > 0 {
			return other[0]
		}
		return ""
	}
	return strings.Join(append(plain, other...), "\n\n")
}

func decodeTransfer(encoding string, body []byte) []byte {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		if b, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body))); err == nil {
			return b
		}
	case "base64":
		clean := bytes.Map(func(r rune) rune {
			if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, body)
		if b, err := base64.StdEncoding.DecodeString(string(clean)); err == nil {
			return b
		}
		if b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(string(clean), "=")); err == nil {
			return b
		}
	}
	return body
}

// toUTF8 converts text in the named charset to UTF-8. Unknown charsets and
// text that is already valid UTF-8 pass through; invalid bytes become U+FFFD
// when the result is written as JSON.
func toUTF8(b []byte, cs string) string {
	if cs == "" || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "us-ascii") {
		return string(b)
	}
	r, err := charset.NewReaderLabel(cs, bytes.NewReader(b))
	if err != nil {
		return string(b)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return string(b)
	}
	return string(out)
}

// htmlText returns the text nodes of an HTML document, skipping script and
// style, with block elements separated by newlines.
func htmlText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				skip++
			case "br", "p", "div", "tr", "li", "h1", "h2", "h3", "table":
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if n := string(name); (n == "script" || n == "style") && skip > 0 {
				skip--
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
}

func decodeHeader(s string) string {
	if d, err := wordDecoder.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

var (
	spaceRun   = regexp.MustCompile(`[ \t\r\f\v]+`)
	blankLines = regexp.MustCompile(`\n{3,}`)
)

// cleanSpace folds all white space runs into single spaces.
func cleanSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cleanBody folds horizontal white space, trims lines and keeps at most one
// blank line between paragraphs.
func cleanBody(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(spaceRun.ReplaceAllString(l, " "))
	}
	s = blankLines.ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
}

// truncate cuts s to at most n bytes on a rune boundary; n <= 0 keeps all.
func truncate(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
