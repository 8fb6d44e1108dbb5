package vfs

import (
	"fmt"
	"io"
	"path/filepath"
)

// WriteFileAtomic replaces the file path with data so that a crash at any
// point leaves either the old contents (or no file, if there was none) or
// the new contents whole, never a mix or an empty file: it writes a
// temporary file beside path, makes it durable, renames it over path and
// makes the rename durable. Once it returns nil the new contents survive a
// crash. A failed call may leave the temporary file behind; the next call
// replaces it.
func WriteFileAtomic(fs FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("fsync the directory of %s: %w", path, err)
	}
	return nil
}

// ReadFile reads the whole file path.
func ReadFile(fs FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
