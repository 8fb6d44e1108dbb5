// Package vfs is the file system seam of Weft's durable files: the few
// operations a write-ahead log needs, with the operating system's
// implementation for production and a strict in-memory one (MemFS) whose
// simulated crash keeps only what was fsynced, for crash tests.
package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// FS is a file system. Names are paths as filepath builds them.
//
// Durability follows POSIX: a file's contents are durable once File.Sync
// returns nil; a new, removed or renamed directory entry is durable once
// SyncDir of the directory holding it returns nil (for a new directory, of
// its parent).
type FS interface {
	// Create creates the file name, or truncates it if it exists, and opens
	// it for reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading.
	Open(name string) (File, error)
	// OpenRW opens an existing file for reading and writing.
	OpenRW(name string) (File, error)
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string) error
	// List returns the names of dir's entries, sorted.
	List(dir string) ([]string, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames oldname to newname, replacing a file of that name.
	Rename(oldname, newname string) error
	// SyncDir makes the entries of dir durable.
	SyncDir(dir string) error
}

// File is an open file. Its methods may be called concurrently, except
// Read, which moves the file's offset.
type File interface {
	io.Reader
	io.ReaderAt
	// WriteAt writes at off; n < len(p) comes with a non-nil error.
	io.WriterAt
	io.Closer
	// Sync makes the file's contents durable. After it fails, what was
	// written before may be lost even if a later Sync succeeds (Linux marks
	// the pages clean on a failed writeback), so a caller must not retry.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Size is the file's current size.
	Size() (int64, error)
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

var _ FS = osFS{}

type osFile struct{ *os.File }

var _ File = osFile{}

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenRW(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for k, e := range entries {
		names[k] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", filepath.Clean(dir), err)
	}
	return nil
}
