package identity

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// pemType is the PEM block type of the key file (PKCS#8, RFC 5958).
const pemType = "PRIVATE KEY"

// maxKeyFile bounds how much of a key file is read; a real one is 119 bytes.
const maxKeyFile = 16 << 10

// LoadOrCreate loads the node key from path, or creates it when path does not exist.
// created reports whether a new key was generated. The parent directory must exist.
//
// An existing file is refused when it is a symlink, not a regular file, readable or
// writable by group or others, or owned by another user: the error names the path and the
// command that fixes it. A new key is written to an O_EXCL temporary file in the same
// directory (mode 0600), synced, and linked into place; link(2), unlike rename(2), fails if
// another process created the key meanwhile, in which case that key is loaded instead of
// being silently replaced.
func LoadOrCreate(path string) (id *Identity, created bool, err error) {
	for attempt := 0; attempt < 2; attempt++ {
		data, err := readKeyFile(path)
		if err == nil {
			id, err := parseKey(path, data)
			return id, false, err
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
		id, err = createKeyFile(path)
		if errors.Is(err, fs.ErrExist) {
			continue // lost a creation race: load the winner's key
		}
		if err != nil {
			return nil, false, err
		}
		slog.Info("created node identity", "aid", id.AID(), "path", path)
		return id, true, nil
	}
	return nil, false, fmt.Errorf("load identity %s: file keeps appearing and disappearing", path)
}

func parseKey(path string, data []byte) (*Identity, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("load identity %s: no PEM block", path)
	}
	if block.Type != pemType {
		return nil, fmt.Errorf("load identity %s: PEM type %q, want %q", path, block.Type, pemType)
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("load identity %s: PEM headers are not supported (encrypted key?)", path)
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, fmt.Errorf("load identity %s: trailing data after the PEM block", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load identity %s: parse PKCS#8: %w", path, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("load identity %s: key is %T, want an Ed25519 key", path, key)
	}
	return fromPrivateKey(priv), nil
}

func createKeyFile(path string) (*Identity, error) {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("create identity %s: directory: %w", path, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("create identity %s: %s is not a directory", path, dir)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("create identity %s: generate: %w", path, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("create identity %s: encode: %w", path, err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der})

	// CreateTemp opens with O_CREATE|O_EXCL and mode 0600.
	tmp, err := os.CreateTemp(dir, ".identity-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create identity %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create identity %s: chmod: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create identity %s: write: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create identity %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("create identity %s: close: %w", path, err)
	}
	if err := os.Link(tmpName, path); err != nil {
		return nil, fmt.Errorf("create identity %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("create identity %s: %w", path, err)
	}
	return fromPrivateKey(priv), nil
}

// syncDir makes the new directory entry durable: without it a crash can lose a key whose
// aid peers have already seen.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
