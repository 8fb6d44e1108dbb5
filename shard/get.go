package shard

import (
	"context"
)

// Realtime gets go to the shard's primary, which holds every acknowledged
// write (applied before the write was acknowledged).

// Refresh implements Copies: it waits for the group the local copy h.Alloc
// is committing, if any, and indexes what the copy has behind. A copy not
// open here has nothing to do.
func (s *Store) Refresh(_ context.Context, h Header) error {
	alloc := h.Alloc
	sc, ok := s.copy(alloc)
	if !ok {
		return nil
	}
	sc.waitForWrites()
	return sc.catchUp()
}
