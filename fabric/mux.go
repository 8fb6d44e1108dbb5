package fabric

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
)

// Mux routes requests to handlers by method. The zero value is ready to use;
// Handle may be called while serving. It must not be copied after first use.
type Mux struct {
	mu sync.Mutex // serialises Handle
	// handlers is replaced, never modified, so that serving a request
	// reads it without a lock: a read lock's shared counter would be
	// written by every request from every processor.
	handlers atomic.Pointer[map[Method]Handler]
}

// Handle registers h for m, replacing any previous handler.
func (m *Mux) Handle(method Method, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[Method]Handler)
	if cur := m.handlers.Load(); cur != nil {
		maps.Copy(next, *cur)
	}
	next[method] = h
	m.handlers.Store(&next)
}

// HandleFunc registers f for m.
func (m *Mux) HandleFunc(method Method, f func(ctx context.Context, req *Request) ([]byte, error)) {
	m.Handle(method, HandlerFunc(f))
}

// ServeFabric dispatches req; an unregistered method gets CodeUnknownMethod.
func (m *Mux) ServeFabric(ctx context.Context, req *Request) ([]byte, error) {
	var h Handler
	if hs := m.handlers.Load(); hs != nil {
		h = (*hs)[req.Method]
	}
	if h == nil {
		return nil, Errorf(CodeUnknownMethod, "no handler for method %d", req.Method)
	}
	return h.ServeFabric(ctx, req)
}
