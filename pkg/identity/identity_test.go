package identity

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func keyPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "identity.key")
}

func mustCreate(t *testing.T, path string) *Identity {
	t.Helper()
	id, created, err := LoadOrCreate(path)
	if err != nil {
		t.Fatalf("LoadOrCreate(%s) error = %v", path, err)
	}
	if !created {
		t.Fatalf("LoadOrCreate(%s) created = false, want true for a missing file", path)
	}
	return id
}

func TestLoadOrCreateRoundTrip(t *testing.T) {
	path := keyPath(t)
	id := mustCreate(t, path)

	again, created, err := LoadOrCreate(path)
	if err != nil {
		t.Fatalf("LoadOrCreate(existing) error = %v", err)
	}
	if created {
		t.Errorf("LoadOrCreate(existing) created = true, want false")
	}
	if again.AID() != id.AID() {
		t.Errorf("aid after reload = %s, want %s (aid must be stable across loads)", again.AID(), id.AID())
	}
	msg := []byte("evidence hash")
	if sig := again.Sign(msg); !ed25519.Verify(id.Public(), msg, sig) {
		t.Errorf("signature of reloaded key does not verify with the first key's public key")
	}
	if got := AIDFromPublicKey(id.Public()); got != id.AID() {
		t.Errorf("AIDFromPublicKey(Public()) = %s, want %s", got, id.AID())
	}

	// The file format is PEM "PRIVATE KEY" holding PKCS#8; another tool must be able to read it.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key file PEM block = %v, want type PRIVATE KEY", block)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatalf("ParsePKCS8PrivateKey(key file) error = %v", err)
	}
	if !bytes.Equal(key.(ed25519.PrivateKey).Public().(ed25519.PublicKey), id.Public()) {
		t.Errorf("public key in file does not match Identity.Public()")
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after create, want 1 (the key)", len(entries))
	}
}

func TestCreatedFileIsPrivate(t *testing.T) {
	old := syscallUmask(0) // the mode must not depend on a permissive umask
	defer syscallUmask(old)
	path := keyPath(t)
	mustCreate(t, path)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("mode of created key = %04o, want 0600", got)
	}
}

func TestLoadRefusesUnsafeFiles(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    []string // substrings of the error
	}{
		{
			name:    "mode 0644",
			prepare: func(t *testing.T, path string) { chmod(t, path, 0o644) },
			want:    []string{"mode 0644", "chmod 600"},
		},
		{
			name:    "mode 0640",
			prepare: func(t *testing.T, path string) { chmod(t, path, 0o640) },
			want:    []string{"mode 0640", "chmod 600"},
		},
		{
			name:    "mode 0602",
			prepare: func(t *testing.T, path string) { chmod(t, path, 0o602) },
			want:    []string{"mode 0602", "chmod 600"},
		},
		{
			name: "symlink to a private key",
			prepare: func(t *testing.T, path string) {
				real := path + ".real"
				if err := os.Rename(path, real); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(real, path); err != nil {
					t.Fatal(err)
				}
			},
			// The temporary directory's name holds the case name, so match the message.
			want: []string{"is a symlink; refusing to follow it"},
		},
		{
			name: "owned by another user",
			prepare: func(t *testing.T, path string) {
				if os.Getuid() != 0 {
					t.Fatalf("this case chowns the key to another uid and needs root (CI runs as root); uid = %d", os.Getuid())
				}
				if err := os.Chown(path, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"owned by uid 65534", "chown"},
		},
		{
			name: "directory",
			prepare: func(t *testing.T, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"not a regular file"},
		},
		{
			name: "not a key",
			prepare: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte("hello\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"no PEM block"},
		},
		{
			name: "larger than a key file",
			prepare: func(t *testing.T, path string) {
				if err := os.WriteFile(path, bytes.Repeat([]byte("A"), maxKeyFile+1), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{fmt.Sprintf("larger than %d bytes", maxKeyFile)},
		},
		{
			name: "trailing data after the key",
			prepare: func(t *testing.T, path string) {
				appendFile(t, path, "extra\n")
			},
			want: []string{"trailing data after the PEM block"},
		},
		{
			name: "PEM headers (encrypted key)",
			prepare: func(t *testing.T, path string) {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				block, _ := pem.Decode(data)
				block.Headers = map[string]string{"Proc-Type": "4,ENCRYPTED"}
				if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"PEM headers are not supported"},
		},
		{
			name: "RSA-style PEM type",
			prepare: func(t *testing.T, path string) {
				data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{1}})
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{`PEM type "RSA PRIVATE KEY"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := keyPath(t)
			id := mustCreate(t, path)
			tt.prepare(t, path)
			got, created, err := LoadOrCreate(path)
			if err == nil {
				t.Fatalf("LoadOrCreate(%s) = %v, created %v, want an error", tt.name, got, created)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadOrCreate(%s) error = %q, want it to contain %q", tt.name, err, w)
				}
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("LoadOrCreate(%s) error = %q, want it to name the path %s", tt.name, err, path)
			}
			if seed := hex.EncodeToString(id.priv.Seed()); strings.Contains(err.Error(), seed) {
				t.Errorf("error leaks the key")
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// A key created by another process between our read and our link is never replaced: the
// link fails with EEXIST and LoadOrCreate loads the winner's key instead.
func TestCreateNeverReplacesAKey(t *testing.T) {
	path := keyPath(t)
	first := mustCreate(t, path)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createKeyFile(path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("createKeyFile(existing key) error = %v, want fs.ErrExist", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("key file changed by a losing createKeyFile (err %v)", err)
	}
	if id, created, err := LoadOrCreate(path); err != nil || created || id.AID() != first.AID() {
		t.Fatalf("LoadOrCreate after the race = %v, created %v, %v; want the first key %s", id, created, err, first.AID())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".identity-*.tmp")); len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

func TestCreateNeedsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "identity.key")
	if _, _, err := LoadOrCreate(path); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("LoadOrCreate(missing dir) error = %v, want a directory error", err)
	}
}

// TestPrivateKeyNeverPrinted guards the rule that the key never reaches a log or an error:
// every fmt verb and slog handler prints the aid only.
func TestPrivateKeyNeverPrinted(t *testing.T) {
	path := keyPath(t)
	id := mustCreate(t, path)
	seed := id.priv.Seed()
	secrets := []string{
		hex.EncodeToString(seed), hex.EncodeToString(seed[:8]),
		base64.StdEncoding.EncodeToString(seed)[:16],
		fmt.Sprint([]byte(seed[:4]))[1:10], // decimal rendering of the first bytes
	}
	check := func(name, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s = %q leaks private key material %q", name, out, s)
			}
		}
		if !strings.Contains(out, id.AID()) {
			t.Errorf("%s = %q, want it to contain the aid %s", name, out, id.AID())
		}
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%X", "%q"} {
		check("Sprintf("+verb+", identity)", fmt.Sprintf(verb, id))
		check("Sprintf("+verb+", signer)", fmt.Sprintf(verb, id.Signer()))
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "id", id, "signer", id.Signer())
	check("slog JSON", buf.String())
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "id", id, "signer", id.Signer())
	check("slog text", buf.String())

	if _, ok := id.Signer().(ed25519.PrivateKey); ok {
		t.Errorf("Signer() is an ed25519.PrivateKey; a type assertion would expose the key")
	}
}

// TestSignerWorksForTLS shows Signer() is usable as a certificate key, which the peer
// transport needs.
func TestSignerWorksForTLS(t *testing.T) {
	id, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: id.AID()},
		DNSNames:     []string{id.AID()},
		// A self-signed leaf must be a CA for CheckSignatureFrom and for the client's pool.
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, id.Signer().Public(), id.Signer())
	if err != nil {
		t.Fatalf("CreateCertificate with Signer() error = %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Errorf("self-signed certificate does not verify: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		errc <- tls.Server(c, &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: id.Signer()}},
		}).Handshake()
	}()
	cli, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: id.AID()})
	if err != nil {
		t.Fatalf("TLS handshake against a server keyed by Signer() error = %v", err)
	}
	cli.Close()
	if err := <-errc; err != nil {
		t.Fatalf("server handshake error = %v", err)
	}
	digestSig, err := id.Signer().Sign(rand.Reader, []byte("m"), crypto.Hash(0))
	if err != nil || !ed25519.Verify(id.Public(), []byte("m"), digestSig) {
		t.Errorf("Signer().Sign = %x, %v; want a valid Ed25519 signature", digestSig, err)
	}
}

func TestPublicReturnsCopy(t *testing.T) {
	id, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	p := id.Public()
	p[0] ^= 0xff
	if AIDFromPublicKey(id.Public()) != id.AID() {
		t.Errorf("changing the slice Public() returned changed the identity's key")
	}
}
