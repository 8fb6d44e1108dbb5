package fabricbench

import (
	"fmt"
	"io"
	"os"
)

func saveTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("fabricbench: create plot %s: %w", path, err)
	}
	if _, err := w.WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("fabricbench: write plot %s: %w", path, err)
	}
	return f.Close()
}
