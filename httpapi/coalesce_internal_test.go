package httpapi

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordConn records the writes that reach it and fails them with err.
type recordConn struct {
	net.Conn
	writes [][]byte
	err    error
	closed bool
}

func (c *recordConn) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

func (c *recordConn) Close() error { c.closed = true; return nil }

func TestCoalescingConn(t *testing.T) {
	tests := []struct {
		name       string
		writeErr   error
		hold       bool
		parts      []string
		wantWrites []string
		wantErr    bool
		wantClosed bool
	}{
		{name: "writes pass through when not holding", parts: []string{"head", "body"}, wantWrites: []string{"head", "body"}},
		{name: "held writes go out as one", hold: true, parts: []string{"head", "bo", "dy"}, wantWrites: []string{"headbody"}},
		{name: "nothing held writes nothing", hold: true},
		{name: "a failed release closes the connection", hold: true, parts: []string{"head", "body"}, writeErr: errors.New("broken pipe"), wantErr: true, wantClosed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recordConn{err: tc.writeErr}
			c := &coalescingConn{Conn: rc}
			if tc.hold {
				c.hold(16)
			}
			buf := make([]byte, 0, 8)
			for _, p := range tc.parts {
				// The caller reuses its buffer after each Write, as
				// net/http's does: held bytes must be copies.
				buf = append(buf[:0], p...)
				n, err := c.Write(buf)
				if !tc.hold {
					require.NoError(t, err)
				}
				if err == nil {
					require.Equal(t, len(p), n)
				}
				clear(buf)
			}
			err := c.release()
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			var got []string
			for _, w := range rc.writes {
				got = append(got, string(w))
			}
			require.Equal(t, tc.wantWrites, got)
			require.Equal(t, tc.wantClosed, rc.closed)
			// Released: later writes pass through again.
			if !tc.wantClosed {
				_, err = c.Write([]byte("next"))
				require.NoError(t, err)
				require.Equal(t, "next", string(rc.writes[len(rc.writes)-1]))
			}
		})
	}
}
