package shard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFileStreamRoundTrip: what fileStream reads from a directory,
// receiveFiles writes back into a recovery's staging directory, file for
// file, with the total known from the first bytes.
func TestFileStreamRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string][]byte{
		"index_meta.json":    []byte(`{"storage":"scorch"}`),
		"store/root.bolt":    randomBytes(t, 70_000),
		"store/00001.zap":    randomBytes(t, 3<<20+5),
		"store/empty.zap":    nil,
		"store/deep/x/y.bin": randomBytes(t, 10),
	}
	var total int64
	for rel, b := range files {
		p := filepath.Join(src, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		total += int64(len(b))
	}
	s := &Store{dir: t.TempDir(), expected: map[string]*recovery{}}
	rec := &recovery{}
	s.expectFiles("a@1", rec)
	fsm, err := newFileStream("a@1", src)
	require.NoError(t, err)
	defer fsm.Close()
	require.Equal(t, total, fsm.total)
	// Read in odd sizes, as fabric.SendStream's chunks cut the stream.
	r := &oddReader{r: fsm, sizes: []int{1, 7, 4096, 1 << 20, 13}}
	require.NoError(t, s.receiveFiles(context.Background(), "p", r))
	for rel, b := range files {
		got, err := os.ReadFile(filepath.Join(s.stagingDir("a@1"), "index", filepath.FromSlash(rel)))
		require.NoError(t, err, rel)
		require.Equal(t, len(b), len(got), rel)
		require.True(t, string(b) == string(got), "%s differs", rel)
	}
	require.Equal(t, total, rec.info.BytesTotal)
	require.Equal(t, total, rec.info.BytesDone)
}

// TestReceiveFilesRefusesBadStreams: a stream for no expected recovery, a
// file outside the index directory, or more bytes than announced is
// refused, and what was written of it is removed.
func TestReceiveFilesRefusesBadStreams(t *testing.T) {
	stream := func(id string, total int64, files ...streamFile) []byte {
		b := append([]byte(filesMagic), appendStr(nil, id)...)
		b = appendUint64(b, uint64(total))
		for _, f := range files {
			b = appendUint64(appendStr(b, f.rel), uint64(f.size))
			b = append(b, make([]byte, f.size)...)
		}
		return appendStr(b, "")
	}
	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"an older version", []byte("WEFTREC1\x03a@1"), "not a recovery file stream"},
		{"no recovery expects it", stream("b@2", 0), "no recovery b@2"},
		{"a file outside the index", stream("a@1", 4, streamFile{"../../x", 4}), "leaves the index directory"},
		{"an absolute path", stream("a@1", 4, streamFile{"/etc/x", 4}), "leaves the index directory"},
		{"more than announced", stream("a@1", 4, streamFile{"f", 3}, streamFile{"g", 3}), "beyond the stream's total"},
		{"less than announced", stream("a@1", 9, streamFile{"f", 3}), "announced 9 bytes and carried 3"},
		{"cut short", stream("a@1", 9, streamFile{"f", 9})[:35], "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{dir: t.TempDir(), expected: map[string]*recovery{}}
			s.expectFiles("a@1", &recovery{})
			err := s.receiveFiles(context.Background(), "p", strings.NewReader(string(tc.payload)))
			require.ErrorContains(t, err, tc.want)
			_, serr := os.Stat(s.stagingDir("a@1"))
			require.ErrorIs(t, serr, os.ErrNotExist, "what was written is removed")
			entries, _ := os.ReadDir(filepath.Dir(s.dir))
			require.Len(t, entries, 1, "nothing is written beside the store")
		})
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

func appendUint64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// oddReader reads from r in the sizes given, in turn.
type oddReader struct {
	r     interface{ Read([]byte) (int, error) }
	sizes []int
	k     int
}

func (o *oddReader) Read(p []byte) (int, error) {
	n := min(len(p), o.sizes[o.k%len(o.sizes)])
	o.k++
	return o.r.Read(p[:n])
}

// FuzzReceiveFiles feeds arbitrary file streams to a target: it never
// panics, writes nothing outside the recovery's staging directory, keeps
// nothing of a stream it refuses, and what it accepts holds exactly the
// bytes the stream announced.
func FuzzReceiveFiles(f *testing.F) {
	stream := func(total int64, files ...streamFile) []byte {
		b := append([]byte(filesMagic), appendStr(nil, "a@1")...)
		b = appendUint64(b, uint64(total))
		for _, sf := range files {
			b = appendUint64(appendStr(b, sf.rel), uint64(sf.size))
			b = append(b, make([]byte, sf.size)...)
		}
		return appendStr(b, "")
	}
	f.Add(stream(0))
	f.Add(stream(7, streamFile{"index_meta.json", 3}, streamFile{"store/root.bolt", 4}))
	f.Add(stream(3, streamFile{"../x", 3}))
	f.Add(stream(1<<40, streamFile{"big", 5}))
	f.Fuzz(func(t *testing.T, p []byte) {
		base := t.TempDir()
		s := &Store{dir: filepath.Join(base, "shards"), expected: map[string]*recovery{}}
		require.NoError(t, os.Mkdir(s.dir, 0o755))
		s.expectFiles("a@1", &recovery{})
		err := s.receiveFiles(context.Background(), "fuzz", strings.NewReader(string(p)))
		var written int64
		require.NoError(t, filepath.WalkDir(base, func(path string, d os.DirEntry, werr error) error {
			if werr != nil || d.IsDir() {
				return werr
			}
			rel, _ := filepath.Rel(s.stagingDir("a@1"), path)
			require.True(t, filepath.IsLocal(rel), "%s was written outside the staging directory", path)
			info, ierr := d.Info()
			require.NoError(t, ierr)
			written += info.Size()
			return nil
		}))
		if err != nil {
			require.Zero(t, written, "a refused stream leaves nothing behind")
			return
		}
		require.Equal(t, s.expected["a@1"].info.BytesTotal, written)
	})
}
