package httpapi

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// Request body pacing.
//
// http.Server bounds the time to read a request's headers but not its
// body: a client can send headers and then trickle its body, or stop,
// holding a connection and a handler (and the body read so far) for as long
// as it likes. A paced body must arrive
//
//   - without a stall: no more than BodyTimeout may pass between the
//     handler starting and the first bytes, or between two reads that bring
//     bytes (nginx's client_body_timeout); and
//   - at a minimum average rate: once n bytes have arrived, the rest must
//     keep coming by start + BodyTimeout + n / BodyMinRate seconds, so a
//     body that averages BodyMinRate bytes a second or more, after a head
//     start of BodyTimeout, never runs out of time (Apache's mod_reqtimeout
//     body=T,MinRate=R). BodyMinRate 0 drops this rule.
//
// The rules are enforced with the connection's read deadline (through
// http.ResponseController), set before every read to the earlier of the two
// bounds, so a read blocked on a slow client ends when the body falls
// behind. The deadline is set when the request reaches the API, before the
// handler reads anything: a handler that answers without reading the body
// (an authentication failure, say) leaves net/http to discard the rest
// under the same deadline. It is cleared once the body has been read to
// its end, before the handler goes on to the request's work.
//
// A body that falls behind fails its read with errBodyTooSlow; readBody
// answers 408 request_timeout_exception with "Connection: close" (the reply
// reaches a client that still reads), logs it once, and net/http closes the
// connection.

// errBodyTooSlow is the sentinel of a body read that passed its deadline.
var errBodyTooSlow = errors.New("request body arrived too slowly")

// bodyTooSlowError reports how far a body got before it fell behind.
type bodyTooSlowError struct {
	received int64
	elapsed  time.Duration
	timeout  time.Duration
	minRate  int64
}

func (e *bodyTooSlowError) Error() string {
	if e.minRate > 0 {
		return fmt.Sprintf("the request body arrived too slowly: %d bytes in %v; a body must not stall for %v and must average at least %d bytes per second after the first %v (--http-body-timeout, --http-body-min-rate); the connection is closed",
			e.received, e.elapsed.Round(time.Millisecond), e.timeout, e.minRate, e.timeout)
	}
	return fmt.Sprintf("the request body arrived too slowly: %d bytes in %v; a body must not stall for %v (--http-body-timeout); the connection is closed",
		e.received, e.elapsed.Round(time.Millisecond), e.timeout)
}

func (e *bodyTooSlowError) Unwrap() error { return errBodyTooSlow }

// maxPaceCredit caps the time a body's bytes earn under the rate rule,
// which keeps the deadline arithmetic far from overflow whatever the
// body's size and rate.
const maxPaceCredit = 24 * time.Hour

// pacedBody is a request body read under the pacing rules. Only the
// handler's goroutine reads it, as with any request body.
type pacedBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	r       *http.Request
	log     *slog.Logger
	timeout time.Duration
	minRate int64

	start, last time.Time
	n           int64
	err         error // sticky once the body fell behind
	done        bool  // the end was read and the deadline cleared
}

// paceBody replaces r.Body with a paced one when r has a body and w's
// connection takes read deadlines (a test's recorder does not; its body is
// left alone).
func paceBody(w http.ResponseWriter, r *http.Request, timeout time.Duration, minRate int64, log *slog.Logger) {
	if timeout <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	now := time.Now()
	b := &pacedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), r: r, log: log,
		timeout: timeout, minRate: minRate, start: now, last: now}
	if err := b.rc.SetReadDeadline(b.deadline()); err != nil {
		return
	}
	r.Body = b
}

// deadline is when the next bytes must have arrived.
func (b *pacedBody) deadline() time.Time {
	d := b.last.Add(b.timeout)
	if b.minRate > 0 {
		credit := maxPaceCredit
		if secs := float64(b.n) / float64(b.minRate); secs < maxPaceCredit.Seconds() {
			credit = time.Duration(secs * float64(time.Second))
		}
		if r := b.start.Add(b.timeout + credit); r.Before(d) {
			d = r
		}
	}
	return d
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return b.ReadCloser.Read(p)
	}
	_ = b.rc.SetReadDeadline(b.deadline())
	k, err := b.ReadCloser.Read(p)
	if k > 0 {
		b.n += int64(k)
		b.last = time.Now()
	}
	switch {
	case err == io.EOF:
		// The whole body is here: what the handler does next is not
		// bounded by the body's pace (net/http may already be reading the
		// connection in the background to notice the client leave).
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		e := &bodyTooSlowError{received: b.n, elapsed: time.Since(b.start), timeout: b.timeout, minRate: b.minRate}
		b.err = e
		// No body content or header is logged: only how much came, how
		// fast, and from where.
		b.log.Warn("httpapi: request body arrived too slowly; answering 408 and closing the connection",
			"remote", b.r.RemoteAddr, "method", b.r.Method, "path", b.r.URL.Path,
			"received_bytes", b.n, "content_length", b.r.ContentLength, "elapsed", e.elapsed.Round(time.Millisecond),
			"body_timeout", b.timeout, "body_min_rate", b.minRate)
		return k, e
	}
	return k, err
}
