package fabricbench

import (
	"context"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// GRPCPeer is gRPC-Go unary over TCP with a codec that passes raw
// bytes (no protobuf), with message limits raised to fabric.MaxMessageSize
// and every other setting left at gRPC's defaults.
type GRPCPeer struct {
	srv  *grpc.Server
	ln   net.Listener
	wg   sync.WaitGroup
	addr string
}

var _ Peer = (*GRPCPeer)(nil)

const (
	grpcMethod = "/weft.fabricbench.Echo/Echo"
	grpcMaxMsg = 256<<20 + 1024
)

// rawCodec marshals *[]byte as itself.
type rawCodec struct{}

func (rawCodec) Name() string { return "weft-raw" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("fabricbench: raw codec cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("fabricbench: raw codec cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func echoHandler(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var in []byte
	if err := dec(&in); err != nil {
		return nil, err
	}
	return &in, nil
}

var echoDesc = grpc.ServiceDesc{
	ServiceName: "weft.fabricbench.Echo",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Echo", Handler: echoHandler}},
}

// NewGRPCPeer listens on addr and serves the echo service until Close.
func NewGRPCPeer(addr string) (*GRPCPeer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fabricbench: grpc listen on %s: %w", addr, err)
	}
	srv := grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.MaxRecvMsgSize(grpcMaxMsg),
		grpc.MaxSendMsgSize(grpcMaxMsg),
	)
	srv.RegisterService(&echoDesc, struct{}{})
	p := &GRPCPeer{srv: srv, ln: ln, addr: ln.Addr().String()}
	p.wg.Go(func() { _ = srv.Serve(ln) })
	return p, nil
}

func (p *GRPCPeer) Name() string { return "grpc" }
func (p *GRPCPeer) Shared() bool { return true }

// Addr is the address the server listens on, with the real port.
func (p *GRPCPeer) Addr() string { return p.addr }

// Dial makes one ClientConn; its calls are multiplexed over HTTP/2.
func (p *GRPCPeer) Dial(context.Context) (Caller, error) { return dialGRPC(p.addr) }

// dialGRPC makes one ClientConn to the echo service at addr.
func dialGRPC(addr string) (Caller, error) {
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.ForceCodec(rawCodec{}),
			grpc.MaxCallRecvMsgSize(grpcMaxMsg),
			grpc.MaxCallSendMsgSize(grpcMaxMsg),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("fabricbench: grpc dial %s: %w", addr, err)
	}
	return grpcCaller{cc: cc}, nil
}

// Close stops the server and waits for Serve to return.
func (p *GRPCPeer) Close() error {
	p.srv.Stop()
	p.wg.Wait()
	return nil
}

type grpcCaller struct{ cc *grpc.ClientConn }

func (g grpcCaller) Call(ctx context.Context, payload []byte) ([]byte, error) {
	var reply []byte
	if err := g.cc.Invoke(ctx, grpcMethod, &payload, &reply); err != nil {
		return nil, err
	}
	return reply, nil
}

func (g grpcCaller) Close() error { return g.cc.Close() }
