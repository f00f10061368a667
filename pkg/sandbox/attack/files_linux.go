package attack

import (
	"fmt"
	"os"
	"syscall"
)

// attackSSHKey reads the operator's planted private key by its host path (S3).
func attackSSHKey(env Env) Result {
	if env.SSHKeyPath == "" {
		return notConfigured("SSHKeyPath")
	}
	return readAttack("read operator key "+env.SSHKeyPath, env.SSHKeyPath)
}

// attackControlToken reads the node's control token (F3).
func attackControlToken(env Env) Result {
	if env.ControlTokenPath == "" {
		return notConfigured("ControlTokenPath")
	}
	return readAttack("read control token "+env.ControlTokenPath, env.ControlTokenPath)
}

// readAttack opens and reads path; only ENOENT (not visible) counts: EACCES would mean the
// file is in the sandbox's view and only a permission bit protects it.
func readAttack(what, path string) Result {
	f, err := os.Open(path)
	if err == nil {
		n, _ := f.Read(make([]byte, 1))
		f.Close()
		return notBlocked("succeeded", fmt.Sprintf("%s: opened, read %d bytes", what, n))
	}
	return expectErrno(what, err, syscall.ENOENT)
}

// attackDataDir looks up the node's data dir (S3).
func attackDataDir(env Env) Result {
	if env.DataDir == "" {
		return notConfigured("DataDir")
	}
	_, err := os.Stat(env.DataDir)
	return expectErrno("stat data dir "+env.DataDir, err, syscall.ENOENT)
}

// attackWriteEtc creates a file in /etc (S3): a read-only bind gives EROFS; EACCES is
// accepted too (a directory the run's uid cannot write). A file that got created is removed.
func attackWriteEtc(env Env) Result {
	path := fmt.Sprintf("/etc/anet-attack-%d", os.Getpid())
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		f.Close()
		os.Remove(path)
	}
	return expectErrno("create "+path, err, syscall.EROFS, syscall.EACCES)
}
