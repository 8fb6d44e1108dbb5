package index

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Snapshot writes a consistent copy of the index, as searchable now, into
// dir (which must not exist): a fully functional index that Open opens,
// with the state (applied sequence number) of the snapshot it copies. It
// runs while writes go on, and it costs little: the segment files scorch
// has already persisted are hard-linked into dir, not copied (they are
// immutable: scorch never rewrites a segment file, it only writes new ones
// and deletes old ones, and a deleted link leaves the other name intact);
// the segments still in memory and a root.bolt naming exactly this
// snapshot's segments are written. Where dir is on another file system
// than the index (no hard link), the files are copied. The copy is not
// fsynced: it is a source to read from, not a durable index.
func (i *Index) Snapshot(dir string) error {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.closed {
		return ErrClosed
	}
	adv, err := i.bl.Advanced()
	if err != nil {
		return err
	}
	ci, ok := adv.(bindex.CopyIndex)
	if !ok {
		return fmt.Errorf("index: %s cannot be copied online", i.dir)
	}
	// The copy reader pins its segments' files: scorch deletes none of
	// them until CloseCopyReader.
	cr := ci.CopyReader()
	if cr == nil {
		return fmt.Errorf("index: %s has no snapshot to copy", i.dir)
	}
	defer func() { _ = cr.CloseCopyReader() }()
	linked := map[string]string{} // store/<name> → the persisted segment file
	if is, ok := cr.(*scorch.IndexSnapshot); ok {
		for _, ss := range is.Segments() {
			if ps, ok := ss.Segment().(segment.PersistedSegment); ok {
				linked[filepath.Join("store", filepath.Base(ps.Path()))] = ps.Path()
			}
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("index: snapshot of %s: %w", i.dir, err)
	}
	if err := cr.CopyTo(linkDirectory{dir: dir, linked: linked}); err != nil {
		return fmt.Errorf("index: snapshot of %s into %s: %w", i.dir, dir, err)
	}
	// CopyTo skipped the persisted segments (linkDirectory gave them no
	// writer); they are linked now, while the copy reader still pins them.
	for rel, src := range linked {
		if err := linkOrCopy(src, filepath.Join(dir, rel)); err != nil {
			return fmt.Errorf("index: snapshot of %s into %s: %w", i.dir, dir, err)
		}
	}
	if err := linkOrCopy(filepath.Join(i.dir, metaFile), filepath.Join(dir, metaFile)); err != nil {
		return fmt.Errorf("index: snapshot of %s into %s: %w", i.dir, dir, err)
	}
	return nil
}

// metaFile is bleve's index description, beside store/ in an index
// directory; it is written once, when the index is created.
const metaFile = "index_meta.json"

// linkDirectory is the bleve Directory a snapshot is written into: it
// gives no writer for the files in linked (bleve then skips them, see
// scorch's copyToDirectory) and a new file in dir for the rest.
type linkDirectory struct {
	dir    string
	linked map[string]string
}

var _ bindex.Directory = linkDirectory{}

func (d linkDirectory) GetWriter(rel string) (io.WriteCloser, error) {
	if _, ok := d.linked[filepath.Clean(rel)]; ok {
		return nil, nil
	}
	p := filepath.Join(d.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	// root.bolt must be an *os.File: scorch opens it by name.
	return os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

// linkOrCopy makes dst a hard link of src, or a copy where the file
// system cannot link them.
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	lerr := os.Link(src, dst)
	if lerr == nil {
		return nil
	}
	if errors.Is(lerr, os.ErrNotExist) || errors.Is(lerr, os.ErrExist) {
		return lerr
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
