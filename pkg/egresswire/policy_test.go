package egresswire

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/money"
)

func ptr[T any](v T) *T { return &v }

func TestPolicyValidateAndJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Policy
		want string
	}{
		{"ok", Policy{RunID: "r1", Agent: "claude"}, ""},
		{"empty run id", Policy{Agent: "claude"}, "run_id"},
		{"run id with slash", Policy{RunID: "../x", Agent: "claude"}, "run_id"},
		{"cursor", Policy{RunID: "r", Agent: "cursor"}, "agent_unsupported"},
		{"claude other base", Policy{RunID: "r", Agent: "claude", APIBase: "https://x.example"}, "api_base_refused"},
		{"hermes no base", Policy{RunID: "r", Agent: "hermes"}, "no_api_base"},
		{"raise requests", Policy{RunID: "r", Agent: "claude", Limits: Limits{Model: limits.Model{Requests: 61}}}, "limits.model.requests"},
		{"raise connections", Policy{RunID: "r", Agent: "claude", Limits: Limits{Connections: 33}}, "limits.connections"},
		{"negative body", Policy{RunID: "r", Agent: "claude", Limits: Limits{Model: limits.Model{BodyBytes: -1}}}, "limits.model.body_bytes"},
		{"negative allowance", Policy{RunID: "r", Agent: "claude", Allowance: ptr(money.Micros(-1))}, "allowance_micros"},
		{"zero allowance", Policy{RunID: "r", Agent: "claude", Allowance: ptr(money.Micros(0))}, ""},
		{"loopback", Policy{RunID: "r", Agent: "claude", Listen: ListenLoopback}, ""},
		{"unknown listen", Policy{RunID: "r", Agent: "claude", Listen: "tcp"}, "listen"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
	p := Policy{RunID: "r", Agent: "opencode", APIBase: "https://llm.example/v1", Model: "m", Allow: []string{"pypi.org"}, Limits: Limits{Connections: 4}}
	b, _ := json.Marshal(p)
	var q Policy
	if err := json.Unmarshal(b, &q); err != nil || q.APIBase != p.APIBase || q.Limits.Connections != 4 || q.Allow[0] != "pypi.org" {
		t.Fatalf("JSON round trip = %+v, %v, want %+v", q, err, p)
	}
}

// The daemon links this package: it must not link the keys reader, the model proxy or the
// endpoint, and of this module it imports only the leaf packages.
func TestLinksNoKeysOrProxy(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "anet.dev/anet/pkg/egresswire").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list -deps gave %d packages: the check would prove nothing", len(deps))
	}
	leaves := map[string]bool{"anet.dev/anet/pkg/egresswire": true, "anet.dev/anet/pkg/limits": true, "anet.dev/anet/pkg/money": true,
		"anet.dev/anet/pkg/modelproxy/upstream": true, "anet.dev/anet/pkg/reasons": true}
	for _, d := range deps {
		if d == "anet.dev/anet/pkg/keys" || d == "anet.dev/anet/pkg/modelproxy" || d == "anet.dev/anet/pkg/endpoint" {
			t.Errorf("egresswire links %s", d)
		} else if strings.HasPrefix(d, "anet.dev/") && !leaves[d] {
			t.Errorf("egresswire links %s, not a leaf package", d)
		}
	}
}
