// Package preflight is the one place where the rules that decide whether the node can run are
// applied before it runs, so that `anetd --check`, anetd's start (and reload), `anet config
// set` and `anet doctor` give the same verdict, in the same words and with the same code, as
// the helper that enforces the rule later:
//
//   - the config file: an explicit --config must exist; the file must not be writable by
//     others; it must parse and validate, with the endpoint's own api_base rule and the one
//     egress allow-list rule (pkg/config, pkg/modelproxy/upstream);
//   - the socket paths: the control socket and the longest run socket must fit in a unix
//     socket address (config.CheckSocketPath, which anet-egress applies to each run);
//   - the keys file: owner, mode, no symlink (config.OpenKeysFile) and its content, which
//     only anet-egress may read, so the verdict is anet-egress's own: `anet-egress
//     check` runs keys.Load, the function the serving helper uses;
//   - the models override file, when the operator wrote one: anet-egress reads it too (with
//     rules.LoadCatalog, as `serve` does), in the same call as the keys file.
package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
)

// Options say where the node's files are.
type Options struct {
	// Env reads the environment (the XDG variables); nil is no variable set.
	Env func(string) string
	// ConfigPath is an explicit --config; "" is the default path, which may be missing.
	ConfigPath string
	// HelperDir is an explicit --helper-dir; "" searches as anetd does (pkg/helperpath).
	HelperDir string
}

// Result is one rule's verdict.
type Result struct {
	// Name says what was checked: "config", "socket paths", "keys file", "models file".
	Name string
	// Requirement is the id the rule enforces.
	Requirement string
	Err         error
}

// Check applies every rule and returns each verdict, in order; rules that need the
// configuration are skipped (and not reported) when it cannot be read.
func Check(ctx context.Context, o Options) (config.Paths, config.Config, []Result) {
	env := o.Env
	if env == nil {
		env = func(string) string { return "" }
	}
	p, c, err := config.Resolve(env, o.ConfigPath)
	out := []Result{{Name: "config", Requirement: "C4", Err: err}}
	if err != nil {
		return p, c, out
	}
	out = append(out, Result{Name: "socket paths", Requirement: "C4", Err: p.CheckSocketPaths()})
	// One run of anet-egress's check gives both files' verdicts.
	a, err := HelperCheck(ctx, o.HelperDir, p.KeysFile, ModelsFile(p), nil)
	if err != nil {
		return p, c, append(out, Result{Name: "keys file", Requirement: "F3", Err: err})
	}
	out = append(out, Result{Name: "keys file", Requirement: "F3", Err: a.Keys.Err()})
	if a.Models != nil {
		out = append(out, Result{Name: "models file", Requirement: "C4", Err: a.Models.Err()})
	}
	return p, c, out
}

// ModelsFile is the models override file anet-egress is given: p.ModelsFile() unless there is
// no such file ("": the built-in list). A file that exists but cannot be read is given, so
// that its reader says why.
func ModelsFile(p config.Paths) string {
	if _, err := os.Stat(p.ModelsFile()); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return p.ModelsFile()
}

// Run applies every rule and returns the first refusal.
func Run(ctx context.Context, o Options) (config.Paths, config.Config, error) {
	p, c, results := Check(ctx, o)
	for _, r := range results {
		if r.Err != nil {
			return config.Paths{}, config.Config{}, r.Err
		}
	}
	return p, c, nil
}

// KeysVerdict is the keys file's verdict in `anet-egress check --json` by the function the
// serving helper reads it with. It names providers, never a key.
type KeysVerdict struct {
	OK        bool         `json:"ok"`
	Code      reasons.Code `json:"code,omitempty"`
	Message   string       `json:"message,omitempty"`
	Providers []string     `json:"providers_with_key"`
}

// MethodReloadKeys asks the running anet-egress to read the keys file and the models file
// again (a reload, U3): ReloadKeysRequest → CheckAnswer (Keys and Models). A file it refuses
// leaves what it read from that file before in use.
const MethodReloadKeys = "keys.reload"

// ReloadKeysRequest names the keys file to read (keys_file may have changed) and the models
// override file ("" the built-in list; the operator may have written or removed it).
type ReloadKeysRequest struct {
	Path   string `json:"path"`
	Models string `json:"models,omitempty"`
}

// ModelsVerdict is the models override file's verdict by rules.LoadCatalog, the
// function the serving helper loads it with.
type ModelsVerdict struct {
	OK      bool         `json:"ok"`
	Code    reasons.Code `json:"code,omitempty"`
	Message string       `json:"message,omitempty"`
}

// ModelsVerdictOf is the verdict for the error of rules.LoadCatalog.
func ModelsVerdictOf(err error) ModelsVerdict {
	if err == nil {
		return ModelsVerdict{OK: true}
	}
	code, msg := refusal(err)
	return ModelsVerdict{Code: code, Message: msg}
}

// Err is the verdict as an error with its code and exactly anet-egress's words.
func (v ModelsVerdict) Err() error { return verdictErr(v.OK, v.Code, v.Message) }

// refusal is the code and words of a helper function's error, as a verdict carries them: an
// error without a code of the catalog is an internal one.
func refusal(err error) (reasons.Code, string) {
	code := reasons.CodeOf(err)
	if code == "" {
		code = reasons.Internal
	}
	return code, reasons.Message(err)
}

// verdictErr is a verdict as an error with its code and exactly anet-egress's words.
func verdictErr(ok bool, code reasons.Code, msg string) error {
	if ok {
		return nil
	}
	return &config.PermError{Code: code, Msg: msg}
}

// VerdictOf is the verdict for the result of keys.Load.
func VerdictOf(providers []string, err error) KeysVerdict {
	if err == nil {
		return KeysVerdict{OK: true, Providers: providers}
	}
	v := KeysVerdict{Code: config.KeysFileInvalid, Message: err.Error(), Providers: []string{}}
	var c interface{ Reason() reasons.Code }
	if errors.As(err, &c) {
		v.Code = c.Reason()
	}
	return v
}

// Err is the verdict as an error with its code and exactly anet-egress's words.
func (v KeysVerdict) Err() error { return verdictErr(v.OK, v.Code, v.Message) }

// RunQuery asks whether a run of Agent (with APIBase and Model, as configured) could open its
// endpoint: the upstream, its key, the model it would be pinned to (E2, E10).
type RunQuery struct {
	Agent   string `json:"agent"`
	APIBase string `json:"api_base,omitempty"`
	Model   string `json:"model,omitempty"`
}

// QueryFor is the run the configuration's auto-reply would make: its agent, or for the openai
// back-end the agent whose upstream the completion uses.
func QueryFor(a config.AutoReply) RunQuery {
	agent := string(a.Agent)
	if a.Backend == config.BackendOpenAI {
		agent = upstream.CompletionAgent(a.APIBase)
	}
	return RunQuery{Agent: agent, APIBase: a.APIBase, Model: a.Model}
}

// RunVerdict is anet-egress's answer to a RunQuery, by the function that opens endpoints.
type RunVerdict struct {
	OK bool `json:"ok"`
	// Model is the model the run would be pinned to.
	Model   string       `json:"model,omitempty"`
	Code    reasons.Code `json:"code,omitempty"`
	Message string       `json:"message,omitempty"`
}

// RunVerdictOf is the verdict for endpoint.Check's result.
func RunVerdictOf(model string, err error) RunVerdict {
	if err == nil {
		return RunVerdict{OK: true, Model: model}
	}
	code, msg := refusal(err)
	return RunVerdict{Code: code, Message: msg}
}

// MethodCheckRun asks the running anet-egress a RunQuery (→ RunVerdict), with the keys and the
// models file it serves with.
const MethodCheckRun = "endpoint.check"

// CheckAnswer is `anet-egress check --json`: the keys file's verdict, the models file's when
// one is given, and, when asked, a run's.
type CheckAnswer struct {
	Keys   KeysVerdict    `json:"keys"`
	Models *ModelsVerdict `json:"models,omitempty"`
	Run    *RunVerdict    `json:"run,omitempty"`
}

// OK is whether every verdict in a is.
func (a CheckAnswer) OK() bool {
	return a.Keys.OK && (a.Models == nil || a.Models.OK) && (a.Run == nil || a.Run.OK)
}

// keysTimeout bounds the helper's check; it reads one small file.
const keysTimeout = 30 * time.Second

// Keys asks anet-egress for the keys file's verdict. anetd and the CLI never read the file
// (only anet-egress holds keys), so they run the helper's own check, with the same clean
// environment anetd starts it with, rather than a copy of it.
func Keys(ctx context.Context, helperDir, keysPath string) error {
	a, err := HelperCheck(ctx, helperDir, keysPath, "", nil)
	if err != nil {
		return err
	}
	return a.Keys.Err()
}

// HelperCheck runs `anet-egress check` as anetd would run the helper: the keys file's
// verdict and, when run is set, whether such a run could open its endpoint (with the models
// override file models, "" for none).
func HelperCheck(ctx context.Context, helperDir, keysPath, models string, run *RunQuery) (CheckAnswer, error) {
	dir, err := helperpath.ForThisProgram(helperDir)
	if err != nil {
		return CheckAnswer{}, fmt.Errorf("check keys file: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, keysTimeout)
	defer cancel()
	args := []string{"check", "--json", "--keys", keysPath}
	if models != "" {
		args = append(args, "--models", models)
	}
	if run != nil {
		args = append(args, "--agent", run.Agent, "--api-base", run.APIBase, "--model", run.Model)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, helperpath.Egress), args...)
	cmd.Env = helperpath.Env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var a CheckAnswer
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		return CheckAnswer{}, fmt.Errorf("check keys file with %s: %v: %s", cmd.Path, runErr, strings.TrimSpace(errb.String()))
	}
	return a, nil
}
