package fabric

import (
	"context"
	"sync"
)

// Mux routes requests to handlers by method. The zero value is ready to use;
// Handle may be called while serving.
type Mux struct {
	mu       sync.RWMutex
	handlers map[Method]Handler
}

// Handle registers h for m, replacing any previous handler.
func (m *Mux) Handle(method Method, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handlers == nil {
		m.handlers = make(map[Method]Handler)
	}
	m.handlers[method] = h
}

// HandleFunc registers f for m.
func (m *Mux) HandleFunc(method Method, f func(ctx context.Context, req *Request) ([]byte, error)) {
	m.Handle(method, HandlerFunc(f))
}

// ServeFabric dispatches req; an unregistered method gets CodeUnknownMethod.
func (m *Mux) ServeFabric(ctx context.Context, req *Request) ([]byte, error) {
	m.mu.RLock()
	h := m.handlers[req.Method]
	m.mu.RUnlock()
	if h == nil {
		return nil, Errorf(CodeUnknownMethod, "no handler for method %d", req.Method)
	}
	return h.ServeFabric(ctx, req)
}
