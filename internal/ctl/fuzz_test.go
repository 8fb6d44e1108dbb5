package ctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzReadBatches feeds arbitrary input files to the bulk splitter: it must
// never panic, must either fail with ErrBadInput or produce batches whose
// every line is a JSON object, and must account each item to an input line.
func FuzzReadBatches(f *testing.F) {
	f.Add([]byte(`{"id":"1","a":1}`+"\n"+`{"id":"2"}`), "")
	f.Add([]byte(`{"index":{"_index":"m","_id":"1"}}`+"\n"+`{"a":1}`+"\n"+`{"delete":{"_id":"2"}}`+"\n"), "bulk")
	f.Add([]byte(`{"update":{"_id":"1"}}`+"\n"+`{"doc":{"a":2}}`+"\n\n\n"), "bulk")
	f.Add([]byte("\xff\xfe{\n}"), "lines")
	f.Add([]byte(`{"id":7}`+"\n"+`{"id":null}`), "lines")
	f.Add([]byte(`{"index":{}}`+"\n"), "auto")
	f.Fuzz(func(t *testing.T, input []byte, format string) {
		fm, err := ParseFormat(format)
		if err != nil {
			return
		}
		out := make(chan batch)
		var got []batch
		done := make(chan struct{})
		go func() {
			defer close(done)
			for b := range out {
				got = append(got, b)
			}
		}()
		err = readBatches(context.Background(), bytes.NewReader(input), LoadOptions{Index: "m", Format: fm, IDField: "id", BatchDocs: 2, BatchBytes: 64}, out)
		close(out)
		<-done
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("error %v does not wrap ErrBadInput", err)
			}
			return
		}
		for _, b := range got {
			if len(b.lines) == 0 {
				t.Fatal("empty batch sent")
			}
			sc := bufio.NewScanner(bytes.NewReader(b.body))
			sc.Buffer(nil, len(b.body)+1)
			n := 0
			for sc.Scan() {
				n++
				var v map[string]json.RawMessage
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					t.Fatalf("batch line %q is not a JSON object: %v", sc.Bytes(), err)
				}
			}
			if n < len(b.lines) || n > 2*len(b.lines) {
				t.Fatalf("batch has %d lines for %d items", n, len(b.lines))
			}
		}
	})
}
