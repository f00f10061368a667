package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

// modelsFixture is a service dir with a keys file and a models file the test rewrites.
type modelsFixture struct {
	dir, keys, models string
}

func newModelsFixture(t *testing.T) modelsFixture {
	t.Helper()
	// Under /tmp: the run sockets must fit in a unix socket address.
	dir, err := os.MkdirTemp("/tmp", "anet-models-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := modelsFixture{dir: dir, keys: filepath.Join(dir, "keys.yaml"), models: filepath.Join(dir, "models.yaml")}
	if err := os.WriteFile(f.keys, []byte("anthropic: sk-ant-models-7e1a\nopenai: sk-models-7e1a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// write makes the models file's alias "quick" name model, which the file adds.
func (f modelsFixture) write(t *testing.T, model string) {
	t.Helper()
	y := fmt.Sprintf("providers:\n  anthropic:\n    aliases: {quick: %s}\n    models:\n      %s: {max_output_tokens: 2048}\n", model, model)
	if err := os.WriteFile(f.models, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
}

// breakFile leaves the alias "quick" naming a model the file does not have.
func (f modelsFixture) breakFile(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(f.models, []byte("providers:\n  anthropic:\n    aliases: {quick: claude-nowhere-1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// open asks s, as anetd does, for an endpoint of a claude run configured with model.
func open(t *testing.T, s *Service, run, model string) (egresswire.OpenReply, error) {
	t.Helper()
	body, _ := json.Marshal(egresswire.OpenRequest{Policy: endpoint.Policy{RunID: run, Agent: "claude", Model: model}})
	rep, err := s.handleOpen(context.Background(), &privsep.Request{Method: egresswire.MethodOpen, Body: body})
	if err != nil {
		return egresswire.OpenReply{}, err
	}
	body, _ = json.Marshal(egresswire.CloseRequest{RunID: run})
	t.Cleanup(func() {
		s.handleClose(context.Background(), &privsep.Request{Method: egresswire.MethodClose, Body: body})
	})
	return rep.Body.(egresswire.OpenReply), nil
}

func reload(t *testing.T, s *Service, f modelsFixture) preflight.CheckAnswer {
	t.Helper()
	body, _ := json.Marshal(preflight.ReloadKeysRequest{Path: f.keys, Models: f.models})
	rep, err := s.handleReloadKeys(context.Background(), &privsep.Request{Method: preflight.MethodReloadKeys, Body: body})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	return rep.Body.(preflight.CheckAnswer)
}

// U3, C4: anet-egress reads the models file once at start and again on a reload, never per
// run. A file edited into a broken state changes no run; the reload that reads it is refused
// with models_file_invalid in LoadCatalog's words, and new runs keep the last good catalog.
func TestReloadModelsKeepsTheLastGoodCatalog(t *testing.T) {
	f := newModelsFixture(t)
	f.write(t, "claude-mini-6")
	s := New(keys.Keys{}, f.dir, slog.New(slog.DiscardHandler))
	s.LoadKeys(f.keys)
	if v := s.LoadModels(f.models); !v.OK {
		t.Fatalf("LoadModels(good) = %+v", v)
	}
	pinnedTo := func(run string) string {
		t.Helper()
		rep, err := open(t, s, run, "quick")
		if err != nil {
			t.Fatalf("open %s: %v", run, err)
		}
		return rep.Model
	}
	if got := pinnedTo("r1"); got != "claude-mini-6" {
		t.Fatalf("run pinned to %q, want the good file's claude-mini-6", got)
	}

	f.breakFile(t)
	if got := pinnedTo("r2"); got != "claude-mini-6" {
		t.Fatalf("after an edit without reload, run pinned to %q, want claude-mini-6 (the file is read on reload only)", got)
	}
	a := reload(t, s, f)
	_, want := rules.LoadCatalog(f.models)
	if a.Models == nil || a.Models.OK || a.Models.Code != rules.ModelsFileInvalid || a.Models.Message != want.Error() {
		t.Fatalf("reload of a broken file: models = %+v, want %s: %q", a.Models, rules.ModelsFileInvalid, want)
	}
	if !strings.Contains(a.Models.Message, f.models) || !strings.Contains(a.Models.Message, "providers.anthropic.aliases.quick") {
		t.Fatalf("refusal %q does not name the file and the field", a.Models.Message)
	}
	if !a.Keys.OK {
		t.Fatalf("keys verdict %+v; the keys file is good", a.Keys)
	}
	if info := s.KeysInfo(); info["models_code"] != string(rules.ModelsFileInvalid) || info["models_error"] != want.Error() {
		t.Fatalf("status info after a refused reload = %v, want the models file's refusal", info)
	}
	if got := pinnedTo("r3"); got != "claude-mini-6" {
		t.Fatalf("after a refused reload, run pinned to %q, want claude-mini-6 from the last good file", got)
	}
	if v := checkRun(t, s, "quick"); !v.OK || v.Model != "claude-mini-6" {
		t.Fatalf("check of a run after a refused reload = %+v, want claude-mini-6", v)
	}

	f.write(t, "claude-micro-7")
	if a := reload(t, s, f); a.Models == nil || !a.Models.OK {
		t.Fatalf("reload of a fixed file: %+v", a.Models)
	}
	if _, ok := s.KeysInfo()["models_code"]; ok {
		t.Fatal("the refusal is still reported after a good reload")
	}
	if got := pinnedTo("r4"); got != "claude-micro-7" {
		t.Fatalf("after a good reload, run pinned to %q, want claude-micro-7", got)
	}
}

func checkRun(t *testing.T, s *Service, model string) preflight.RunVerdict {
	t.Helper()
	body, _ := json.Marshal(preflight.RunQuery{Agent: "claude", Model: model})
	rep, err := s.handleCheckRun(context.Background(), &privsep.Request{Method: preflight.MethodCheckRun, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Body.(preflight.RunVerdict)
}

// U3, C4: a models file refused when serve starts leaves no catalog to keep: the helper
// serves (anetd shows the reason, as for a refused keys file), and every run and run check is
// refused with the file's code and words, never with the built-in list, until a reload
// accepts a file.
func TestModelsRefusedAtStartRefusesRuns(t *testing.T) {
	f := newModelsFixture(t)
	f.breakFile(t)
	s := New(keys.Keys{}, f.dir, slog.New(slog.DiscardHandler))
	s.LoadKeys(f.keys)
	v := s.LoadModels(f.models)
	if v.OK || v.Code != rules.ModelsFileInvalid {
		t.Fatalf("LoadModels(broken) = %+v", v)
	}
	_, err := open(t, s, "r1", "")
	var pe *privsep.Error
	if err == nil || !errors.As(err, &pe) || pe.Code != rules.ModelsFileInvalid || !strings.Contains(pe.Message, v.Message) {
		t.Fatalf("open with a refused models file = %v, want %s: %s", err, rules.ModelsFileInvalid, v.Message)
	}
	if rv := checkRun(t, s, ""); rv.OK || rv.Code != rules.ModelsFileInvalid || rv.Message != v.Message {
		t.Fatalf("check of a run = %+v, want %s: %s", rv, rules.ModelsFileInvalid, v.Message)
	}
	_, err = s.complete(context.Background(), egresswire.CompleteRequest{RunID: "c1", Task: "hi"})
	if reasons.CodeOf(err) != rules.ModelsFileInvalid {
		t.Fatalf("completion with a refused models file = %v, want %s", err, rules.ModelsFileInvalid)
	}
	f.write(t, "claude-mini-6")
	if a := reload(t, s, f); !a.Models.OK {
		t.Fatalf("reload of a fixed file: %+v", a.Models)
	}
	if rep, err := open(t, s, "r2", "quick"); err != nil || rep.Model != "claude-mini-6" {
		t.Fatalf("open after a good reload = %+v, %v", rep, err)
	}
}

// The catalog is shared by every run and replaced whole by a reload; run under -race, this
// finds any write to it after loading (NewEngine, Resolve) or a reload racing with runs.
func TestCatalogSharedByConcurrentRuns(t *testing.T) {
	f := newModelsFixture(t)
	f.write(t, "claude-mini-6")
	s := New(keys.Keys{}, f.dir, slog.New(slog.DiscardHandler))
	s.LoadKeys(f.keys)
	s.LoadModels(f.models)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Go(func() {
			for i := range 4 {
				run := fmt.Sprintf("g%d-%d", g, i)
				body, _ := json.Marshal(egresswire.OpenRequest{Policy: endpoint.Policy{RunID: run, Agent: "claude", Model: "quick"}})
				rep, err := s.handleOpen(context.Background(), &privsep.Request{Method: egresswire.MethodOpen, Body: body})
				if err != nil {
					errs <- err
					return
				}
				if m := rep.Body.(egresswire.OpenReply).Model; m != "claude-mini-6" {
					errs <- fmt.Errorf("%s pinned to %s", run, m)
				}
				body, _ = json.Marshal(egresswire.CloseRequest{RunID: run})
				if _, err := s.handleClose(context.Background(), &privsep.Request{Method: egresswire.MethodClose, Body: body}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			s.LoadModels(f.models)
			checkRun(t, s, "quick")
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
