package enginebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/blevesearch/bleve/v2"
)

// RawWorkerEnv is internal to the benchmark: Run sets it, to the raw bleve
// index directory, on the copy of its own executable that it starts as the
// raw worker. Users never set it.
//
// Why a worker: the raw side's searches allocate (a phrase search about
// 134 kB), and in a process that is also the HTTP client their garbage
// collection runs during the HTTP side's timed calls (and the client's
// during raw's). In its own process, raw bleve is still called directly and
// timed around the call, in the worker; only the request and the answer
// cross the pipe, outside the timed span.
const RawWorkerEnv = "WEFT_ENGINEBENCH_RAW_WORKER"

// RawWorkerMain turns the process into the raw worker when RawWorkerEnv is
// set: it serves requests from standard input until it closes and returns
// the exit code and true. Otherwise it returns 0, false at once. Every
// binary that calls Run must call it first in main (or TestMain) and exit
// with the code when it returns true, because Run re-executes
// os.Executable() as the worker:
//
//	if code, ok := enginebench.RawWorkerMain(); ok {
//		os.Exit(code)
//	}
func RawWorkerMain() (code int, isWorker bool) {
	dir := os.Getenv(RawWorkerEnv)
	if dir == "" {
		return 0, false
	}
	if err := serveRawWorker(context.Background(), dir, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench raw worker:", err)
		return 1, true
	}
	return 0, true
}

// The worker's protocol: JSON lines over its standard input and output.
// The worker first writes a workerHello; then, for each workerRequest, one
// workerReply. It exits when its input closes.
type (
	workerHello struct {
		Docs uint64 `json:"docs"` // documents in the opened index
	}
	workerRequest struct {
		Kind  QueryKind `json:"kind,omitempty"`
		Terms []string  `json:"terms,omitempty"`
		Size  int       `json:"size,omitempty"`
		// Stats asks for the worker's garbage collection count instead of
		// a search.
		Stats bool `json:"stats,omitempty"`
	}
	workerReply struct {
		// NS is the search's duration, measured in the worker around
		// rawIndex.search (bleve's SearchInContext and the hit collection).
		NS     int64     `json:"ns"`
		Total  uint64    `json:"total"`
		IDs    []string  `json:"ids"`
		Scores []float64 `json:"scores"` // JSON numbers round-trip float64 exactly
		NumGC  uint32    `json:"num_gc,omitempty"`
		Error  string    `json:"error,omitempty"`
	}
)

// check reports whether req is a query that rawQuery can build.
func (req workerRequest) check() error {
	want := 1
	switch req.Kind {
	case KindTerm, KindPhrase:
	case KindBoolean:
		want = 3
	default:
		return fmt.Errorf("query kind %q is not term, boolean or phrase", req.Kind)
	}
	if len(req.Terms) != want {
		return fmt.Errorf("%s query has %d terms, want %d", req.Kind, len(req.Terms), want)
	}
	if req.Size < 1 {
		return fmt.Errorf("%s query asks for %d hits, want at least 1", req.Kind, req.Size)
	}
	return nil
}

// serveRawWorker opens the bleve index in dir and answers requests from in
// on out until in reaches its end. A search that fails is answered with
// its error; a request that cannot be decoded ends the worker with an error.
func serveRawWorker(ctx context.Context, dir string, in io.Reader, out io.Writer) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("raw index: %w", err)
	}
	idx, err := bleve.Open(dir)
	if err != nil {
		return fmt.Errorf("open raw index %s: %w", dir, err)
	}
	r := &rawIndex{idx: idx}
	defer r.Close()
	if raw, err := idx.GetInternal(bm25Key); err != nil {
		return fmt.Errorf("raw index %s: read BM25 statistics: %w", dir, err)
	} else if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.bm25); err != nil {
			return fmt.Errorf("raw index %s: BM25 statistics: %w", dir, err)
		}
	}
	n, err := idx.DocCount()
	if err != nil {
		return fmt.Errorf("raw index %s: count documents: %w", dir, err)
	}
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	send := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := send(workerHello{Docs: n}); err != nil {
		return fmt.Errorf("write hello: %w", err)
	}
	dec := json.NewDecoder(bufio.NewReader(in))
	for {
		var req workerRequest
		if err := dec.Decode(&req); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("decode request: %w", err)
		}
		var rep workerReply
		if req.Stats {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			rep.NumGC = ms.NumGC
		} else if err := req.check(); err != nil {
			rep.Error = err.Error()
		} else {
			start := time.Now()
			a, err := r.search(ctx, Query{Kind: req.Kind, Terms: req.Terms}, req.Size)
			rep.NS = time.Since(start).Nanoseconds()
			if err != nil {
				rep.Error = err.Error()
			}
			rep.Total, rep.IDs, rep.Scores = a.Total, a.IDs, a.Scores
		}
		if err := send(rep); err != nil {
			return fmt.Errorf("write reply: %w", err)
		}
	}
}

// rawWorker is the parent's handle on a running raw worker. It is used by
// one goroutine at a time; Close must be called once the worker is started.
type rawWorker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	enc    *json.Encoder
	dec    *json.Decoder
	stderr bytes.Buffer  // the worker's standard error; read only after done
	done   chan struct{} // closed once cmd.Wait returned
	err    error         // cmd.Wait's result, set before done is closed
	docs   uint64        // from the hello
}

// startRawWorker runs exe with RawWorkerEnv=dir and waits for its hello.
// ctx bounds the worker's life: when it ends the worker is killed.
func startRawWorker(ctx context.Context, exe, dir string) (*rawWorker, error) {
	w := &rawWorker{done: make(chan struct{})}
	w.cmd = exec.CommandContext(ctx, exe)
	w.cmd.Env = append(os.Environ(), RawWorkerEnv+"="+dir)
	w.cmd.Stderr = &w.stderr
	w.cmd.WaitDelay = 5 * time.Second
	var err error
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start raw worker %s: %w", exe, err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	w.enc = json.NewEncoder(w.in)
	w.dec = json.NewDecoder(bufio.NewReader(out))
	var hello workerHello
	if err := w.dec.Decode(&hello); err != nil {
		return nil, w.fail(fmt.Errorf("raw worker %s: read hello: %w", exe, err))
	}
	w.docs = hello.Docs
	return w, nil
}

// search sends q to the worker and returns the duration the worker
// measured around the search, and its answer.
func (w *rawWorker) search(q Query, size int) (time.Duration, answer, error) {
	rep, err := w.call(workerRequest{Kind: q.Kind, Terms: q.Terms, Size: size})
	if err != nil {
		return 0, answer{}, err
	}
	if rep.Error != "" {
		return 0, answer{}, fmt.Errorf("raw worker: %s", rep.Error)
	}
	return time.Duration(rep.NS), answer{IDs: rep.IDs, Scores: rep.Scores, Total: rep.Total}, nil
}

// numGC returns the worker's count of completed garbage collections.
func (w *rawWorker) numGC() (uint32, error) {
	rep, err := w.call(workerRequest{Stats: true})
	return rep.NumGC, err
}

func (w *rawWorker) call(req workerRequest) (workerReply, error) {
	var rep workerReply
	if err := w.enc.Encode(req); err != nil {
		return rep, w.fail(fmt.Errorf("raw worker: send request: %w", err))
	}
	if err := w.dec.Decode(&rep); err != nil {
		return rep, w.fail(fmt.Errorf("raw worker: read reply: %w", err))
	}
	return rep, nil
}

// fail stops the worker and returns err with the worker's exit status and
// the end of its standard error.
func (w *rawWorker) fail(err error) error {
	werr := w.Close()
	if werr == nil {
		werr = errors.New("exited cleanly")
	}
	return fmt.Errorf("%w (worker: %v)", err, werr)
}

// Close closes the worker's input, which ends it, and waits for it to exit
// (killing it after 30 s). It returns an error, with the worker's standard
// error, when the worker did not exit cleanly. Calling it again returns the
// same result.
func (w *rawWorker) Close() error {
	_ = w.in.Close()
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		_ = w.cmd.Process.Kill()
		<-w.done
	}
	if w.err != nil {
		msg := w.stderr.Bytes()
		if len(msg) > 4000 {
			msg = msg[len(msg)-4000:]
		}
		return fmt.Errorf("raw worker %s: %w; its standard error:\n%s", w.cmd.Path, w.err, bytes.TrimSpace(msg))
	}
	return nil
}
