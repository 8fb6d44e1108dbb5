// Package nodeproc runs searchnode binaries as child processes for the
// benchmarks: it builds the binary, starts a process with its output in a
// log file, waits for its HTTP API to answer, and stops it (package
// freeport picks the ports to give it).
package nodeproc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Build compiles ./cmd/searchnode into dir and returns the binary's path.
// It runs `go build` in the current directory, which must be the module
// root (as `go run ./benchmarks/cmd/...` is).
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "searchnode")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/searchnode")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build searchnode (run from the module root, or pass -searchnode PATH): %w\n%s", err, out)
	}
	return bin, nil
}

// Proc is a searchnode child process. Its methods are safe to call from
// one goroutine at a time.
type Proc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan error // holds cmd.Wait's result once it is known
}

// Start runs bin with args, its standard output and error appended to
// logPath, and env added to this process's environment. It returns once the
// process has started; use WaitHTTP to wait for its API. The caller must
// call Stop.
func Start(bin, logPath string, env []string, args ...string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child keeps its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Proc{cmd: cmd, logPath: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// WaitHTTP polls GET url until it answers 200, the process exits, ctx ends
// or timeout passes; the errors carry the end of the process's log.
func (p *Proc) WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("searchnode exited (%v) before %s answered; its log:\n%s", err, url, p.Tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %v; searchnode's log:\n%s", url, timeout, p.Tail())
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after
// 30 s). An exit other than a clean one is an error carrying the log's end.
func (p *Proc) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("searchnode exited with %v; its log:\n%s", err, p.Tail())
		}
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return fmt.Errorf("searchnode did not stop within 30 s of SIGTERM; killed; its log:\n%s", p.Tail())
	}
}

// Tail returns the last 4000 bytes of the process's log.
func (p *Proc) Tail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}
