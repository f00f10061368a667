package node

import (
	"encoding/json"
	"net/http"
	"os"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/sandbox/remote"
)

// doctorView is GET /v1/doctor: what the running helpers see, for `anet doctor` (S8), so
// that it reports the node as it is, not as the operator's shell would find it: the probe of
// the running anet-sandboxd (the bwrap on its PATH, its limits), the agent program on
// anetd's PATH, and anet-egress's verdicts on the keys file and on a run of the agent.
func (n *Node) doctorView(r *http.Request) (any, error) {
	ctx := r.Context()
	v := control.DoctorView{PID: os.Getpid()}
	probed := false
	if res, err := remote.NewClient(n.sandboxd).Probe(ctx); err != nil {
		v.ProbeError = err.Error()
	} else {
		v.Probe, _ = json.Marshal(res)
		probed = res.OK
	}
	c := n.config().AutoReply
	if n.ar != nil {
		if p, err := n.ar.agentProgram(c); err != nil {
			v.AgentError = err.Error()
		} else {
			v.AgentPath = p
			n.ar.doctorAgent(ctx, c, probed, &v)
		}
	} else {
		v.AgentError = "auto-reply is not in this build"
	}
	v.Keys = n.keysVerdict(n.egress.Status())
	var rv preflight.RunVerdict
	if _, err := n.egress.Call(ctx, preflight.MethodCheckRun, preflight.QueryFor(c), &rv); err == nil {
		v.Run = &rv
	}
	return v, nil
}
