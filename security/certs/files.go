package certs

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Modes of the files this package writes.
const (
	keyMode  fs.FileMode = 0o600
	certMode fs.FileMode = 0o644
)

// writeNew creates path with mode and data, failing with ErrExists if it is
// there already, and syncs it to disk.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s; choose an empty directory or move the old files away", ErrExists, path)
	}
	if err != nil {
		return fmt.Errorf("certs: creating %s: %w", path, err)
	}
	// The umask may have removed bits; it cannot have added any. Set the
	// mode exactly so that a certificate stays world-readable.
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: setting the mode of %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: closing %s: %w", path, err)
	}
	return nil
}

// syncDir makes the directory entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("certs: opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("certs: syncing directory %s: %w", dir, err)
	}
	return nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encoding a private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// readSecret reads a key file, refusing it when its group or other
// permission bits are set. The mode is read from the open file, so the
// file checked is the file read.
func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("certs: opening key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("certs: reading the mode of %s: %w", path, err)
	}
	if err := checkKeyMode(path, fi.Mode()); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("certs: reading %s: %w", path, err)
	}
	return data, nil
}

// checkKeyMode refuses a key file that its group or others may access.
// Windows has no such bits; there the check passes.
func checkKeyMode(path string, mode fs.FileMode) error {
	if runtime.GOOS == "windows" || mode.Perm()&0o077 == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s has mode %04o, so users other than its owner can read it; run chmod 600 %s",
		ErrKeyPermissions, path, mode.Perm(), path)
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: reading certificate: %w", err)
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%w: %s holds no PEM CERTIFICATE block", ErrInvalid, path)
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
		}
		return c, nil
	}
}

// LoadKeyPair loads a PEM certificate chain and its private key, as
// tls.LoadX509KeyPair does, after refusing a key file whose group or other
// permission bits are set (ErrKeyPermissions). It is how a public
// certificate for the HTTP layer (--http-cert, --http-key) is loaded.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	keyData, err := readSecret(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	certData, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: reading certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certData, keyData)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s and %s: %v", ErrInvalid, certFile, keyFile, err)
	}
	return pair, nil
}

// keyPath and certPath join dir and node's file names.
func keyPath(dir, node string) string  { return filepath.Join(dir, KeyFile(node)) }
func certPath(dir, node string) string { return filepath.Join(dir, CertFile(node)) }
