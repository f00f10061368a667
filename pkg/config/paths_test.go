package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultPaths(t *testing.T) {
	runtimeFallback := filepath.Join(os.TempDir(), "anet-"+strconv.Itoa(os.Getuid()))
	cases := []struct {
		name string
		env  map[string]string
		want Paths
	}{
		{"xdg", map[string]string{"HOME": "/home/op", "XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_CACHE_HOME": "/k", "XDG_RUNTIME_DIR": "/run/user/1000"},
			Paths{ConfigDir: "/c/anet", ConfigFile: "/c/anet/config.yaml", KeysFile: "/c/anet/keys.yaml", DataDir: "/d/anet", RuntimeDir: "/run/user/1000/anet", CacheDir: "/k/anet"}},
		{"home fallbacks", map[string]string{"HOME": "/home/op"},
			Paths{ConfigDir: "/home/op/.config/anet", ConfigFile: "/home/op/.config/anet/config.yaml", KeysFile: "/home/op/.config/anet/keys.yaml",
				DataDir: "/home/op/.local/share/anet", RuntimeDir: runtimeFallback, CacheDir: "/home/op/.cache/anet"}},
		{"relative xdg ignored", map[string]string{"HOME": "/home/op", "XDG_CONFIG_HOME": "rel", "XDG_RUNTIME_DIR": "run"},
			Paths{ConfigDir: "/home/op/.config/anet", ConfigFile: "/home/op/.config/anet/config.yaml", KeysFile: "/home/op/.config/anet/keys.yaml",
				DataDir: "/home/op/.local/share/anet", RuntimeDir: runtimeFallback, CacheDir: "/home/op/.cache/anet"}},
		{"xdg without home", map[string]string{"XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_CACHE_HOME": "/k", "XDG_RUNTIME_DIR": "/r"},
			Paths{ConfigDir: "/c/anet", ConfigFile: "/c/anet/config.yaml", KeysFile: "/c/anet/keys.yaml", DataDir: "/d/anet", RuntimeDir: "/r/anet", CacheDir: "/k/anet"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DefaultPaths(envOf(c.env))
			if err != nil || got != c.want {
				t.Fatalf("DefaultPaths(%v) = %+v, %v, want %+v", c.env, got, err, c.want)
			}
		})
	}
	for name, env := range map[string]map[string]string{
		"no home":       {},
		"relative home": {"HOME": "home/op", "XDG_CONFIG_HOME": "/c"},
	} {
		t.Run("error "+name, func(t *testing.T) {
			if got, err := DefaultPaths(envOf(env)); err == nil || !strings.Contains(err.Error(), "HOME") {
				t.Fatalf("DefaultPaths(%v) = %+v, %v, want an error naming HOME", env, got, err)
			}
		})
	}
}

func TestPathHelpers(t *testing.T) {
	p, err := DefaultPaths(envOf(map[string]string{"HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/7"}))
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	cases := []struct{ name, got, want string }{
		{"ControlSocket", p.ControlSocket(), "/run/user/7/anet/control.sock"},
		{"ControlToken", p.ControlToken(), "/run/user/7/anet/control.token"},
		{"Store", p.Store(), "/h/.local/share/anet/anet.db"},
		{"IdentityKey", p.IdentityKey(), "/h/.local/share/anet/identity.key"},
		{"WorkRoot default", p.WorkRoot(c), "/h/.cache/anet/work"},
		{"SandboxWorkRoot", p.SandboxWorkRoot(), "/h/.cache/anet/work-sandbox"},
		{"KeysFile default", p.WithConfig(c).KeysFile, "/h/.config/anet/keys.yaml"},
	}
	c.AutoReply.WorkDir = "/srv/work/"
	c.KeysFile = "/etc/anet//keys.yaml"
	cases = append(cases,
		struct{ name, got, want string }{"WorkRoot work_dir", p.WorkRoot(c), "/srv/work"},
		struct{ name, got, want string }{"KeysFile keys_file", p.WithConfig(c).KeysFile, "/etc/anet/keys.yaml"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("%s = %q, want %q", tc.name, tc.got, tc.want)
			}
		})
	}
}

// TestWorkRootsNeverNest checks S3: the unsandboxed and sandboxed work roots never overlap.
func TestWorkRootsNeverNest(t *testing.T) {
	cache := t.TempDir()
	p := Paths{CacheDir: filepath.Join(cache, "anet")}
	sandboxRoot := p.SandboxWorkRoot()
	if err := os.MkdirAll(sandboxRoot, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "work-link")
	if err := os.Symlink(sandboxRoot, link); err != nil {
		t.Fatal(err)
	}
	parentLink := filepath.Join(t.TempDir(), "cache-link")
	if err := os.Symlink(cache, parentLink); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, workDir string
		refused       bool
	}{
		{"default", "", false},
		{"separate", "/srv/anet-work", false},
		{"sibling with common prefix", sandboxRoot + "-trusted", false},
		{"equal", sandboxRoot, true},
		{"equal unclean", sandboxRoot + "/./", true},
		{"inside sandbox root", filepath.Join(sandboxRoot, "aid"), true},
		{"contains sandbox root", p.CacheDir, true},
		{"root dir", "/", true},
		{"symlink to sandbox root", link, true},
		{"not yet existing dir through a symlinked parent", filepath.Join(parentLink, "anet", "work-sandbox", "new"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			cfg.AutoReply.WorkDir = c.workDir
			err := p.CheckWorkRoots(cfg)
			if got := err != nil; got != c.refused {
				t.Fatalf("CheckWorkRoots(work_dir=%q) = %v, want refused=%v", c.workDir, err, c.refused)
			}
			if c.refused && (!strings.HasPrefix(err.Error(), "auto_reply.work_dir: ") || !strings.Contains(err.Error(), "(S3)")) {
				t.Fatalf("CheckWorkRoots error = %q, want it to name auto_reply.work_dir and S3", err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	base := t.TempDir()
	env := map[string]string{"HOME": base, "XDG_CONFIG_HOME": filepath.Join(base, "config"), "XDG_CACHE_HOME": filepath.Join(base, "cache")}
	cfgFile := filepath.Join(base, "config", "anet", "config.yaml")
	t.Run("no file", func(t *testing.T) {
		p, c, err := Resolve(envOf(env), "")
		if err != nil || p.KeysFile != filepath.Join(base, "config", "anet", "keys.yaml") || c.Listen != Default().Listen {
			t.Fatalf("Resolve = %+v, %+v, %v", p, c, err)
		}
	})
	t.Run("keys_file override", func(t *testing.T) {
		if err := Set(cfgFile, "keys_file", "/etc/anet/keys.yaml"); err != nil {
			t.Fatal(err)
		}
		p, _, err := Resolve(envOf(env), "")
		if err != nil || p.KeysFile != "/etc/anet/keys.yaml" {
			t.Fatalf("Resolve KeysFile = %q, %v, want /etc/anet/keys.yaml", p.KeysFile, err)
		}
	})
	t.Run("nested work roots refused", func(t *testing.T) {
		if err := Set(cfgFile, "auto_reply.work_dir", filepath.Join(base, "cache", "anet")); err != nil {
			t.Fatal(err)
		}
		_, _, err := Resolve(envOf(env), "")
		if err == nil || !strings.HasPrefix(err.Error(), cfgFile+": auto_reply.work_dir: ") {
			t.Fatalf("Resolve = %v, want the work-root refusal naming the file", err)
		}
	})
}
