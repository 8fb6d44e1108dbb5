package fabricbench

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiles names the files a measurement writes its profiles to; an empty
// name skips that profile. They cover the whole process: every transport
// measured and its servers, so profile one transport at a time.
type Profiles struct {
	CPU   string
	Mutex string // every contended lock (SetMutexProfileFraction(1))
	Block string // blocking events, sampled at BlockProfileRate
}

// BlockProfileRate is the block profile's sampling rate in nanoseconds: an
// event blocked this long or longer is always recorded, a shorter one with
// probability duration/rate, which keeps the cost of recording low while
// hand-offs of a few microseconds still show up in proportion.
const BlockProfileRate = 1000

// Start begins the profiles and returns the function that stops them and
// writes their files.
func (p Profiles) Start() (stop func() error, err error) {
	var cpu *os.File
	if p.CPU != "" {
		if cpu, err = os.Create(p.CPU); err != nil {
			return nil, fmt.Errorf("fabricbench: create CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			_ = cpu.Close()
			return nil, fmt.Errorf("fabricbench: start CPU profile: %w", err)
		}
	}
	if p.Mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if p.Block != "" {
		runtime.SetBlockProfileRate(BlockProfileRate)
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		for _, lk := range []struct{ name, path string }{{"mutex", p.Mutex}, {"block", p.Block}} {
			if lk.path != "" {
				errs = append(errs, writeProfile(lk.name, lk.path))
			}
		}
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
		return errors.Join(errs...)
	}, nil
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("fabricbench: create %s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("fabricbench: write %s profile %s: %w", name, path, err)
	}
	return f.Close()
}
