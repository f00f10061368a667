package node

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

func (n *Node) routes(s *control.Server) {
	s.Handle("GET", "/v1/status", func(*http.Request) (any, error) { return n.status(), nil })
	s.Handle("GET", "/v1/evidence", n.listEvidence)
	s.Handle("POST", "/v1/evidence/verify", n.verifyEvidence)
	s.Handle("POST", "/v1/evidence/note", n.noteEvidence)
	s.HandleStream("GET", "/v1/evidence/export", n.exportEvidence)
	n.peerRoutes(s)
	n.autoReplyRoutes(s)
	n.reloadRoutes(s)
	n.dashboardRoutes(s)
	s.Handle("GET", "/v1/spend/history", n.spendHistory)
	s.Handle("GET", "/v1/doctor", n.doctorView)
	s.Handle("POST", "/v1/wall/prove", n.proveWallNow)
}

func (n *Node) status() control.Status {
	now := time.Now()
	cfg := n.config()
	st := control.Status{
		AID:           n.id.AID(),
		Version:       n.opts.Version,
		PID:           os.Getpid(),
		StartedAt:     n.started.UTC(),
		UptimeSeconds: int64(now.Sub(n.started).Seconds()),
		ConfigPath:    n.paths.ConfigFile,
		DataDir:       n.paths.DataDir,
		ControlSocket: n.paths.ControlSocket(),
		ListenAddr:    n.listenAddr(),
		Warnings:      append([]control.Warning(nil), n.warnings...),
		// The engine fills in the counts and the day's bounds (fillAutoReply); a build
		// without auto-reply has no budget to spend.
		Budget: control.Budget{
			RunsPerDay:        cfg.AutoReply.Sandbox.RunsPerDay,
			RunsPerPeerPerDay: cfg.AutoReply.Sandbox.RunsPerPeerPerDay,
			Left:              cfg.AutoReply.Sandbox.RunsPerDay,
			Spend: control.SpendBudget{
				PerDay:        cfg.AutoReply.Sandbox.SpendPerDay,
				PerPeerPerDay: cfg.AutoReply.Sandbox.SpendPerPeerPerDay,
				Left:          cfg.AutoReply.Sandbox.SpendPerDay,
				Peers:         []control.PeerSpend{},
			},
		},
		ProvidersKeyed: []string{},
	}
	for _, h := range n.helpers() {
		hs := h.Status()
		st.Helpers = append(st.Helpers, hs)
		switch hs.State {
		case privsep.StateRunning:
		case privsep.StateUnresponsive:
			st.Warnings = append(st.Warnings, control.Warning{Code: string(reasons.HelperUnresponsive), Text: reasons.Text(reasons.HelperUnresponsive), Detail: helperDetail(hs)})
		default:
			st.Warnings = append(st.Warnings, control.Warning{Code: string(reasons.HelperDown), Text: reasons.Text(reasons.HelperDown), Detail: helperDetail(hs)})
		}
	}
	if w, ok := n.diskWarning(); ok {
		st.Warnings = append(st.Warnings, w)
	}
	var dashWarnings []control.Warning
	st.Dashboard, dashWarnings = n.dashboardStatus()
	st.Warnings = append(st.Warnings, dashWarnings...)
	// Only anet-egress knows the keys; it tells which providers have one, never a value.
	if eg := n.egress.Status(); eg.State == privsep.StateRunning {
		v := n.keysVerdict(eg)
		st.ProvidersKeyed = append(st.ProvidersKeyed, v.Providers...)
		if !v.OK {
			// The keys file's own rule and words, as anetd --check and anet doctor say them.
			code := v.Code
			if code == "" {
				code = reasons.NoAPIKey
			}
			st.Warnings = append(st.Warnings, control.Warning{Code: string(code), Text: reasons.Text(code), Detail: v.Message})
		}
		// A models file it refused: runs keep the last good one, or, if it never read
		// one, are refused until the file is fixed and reloaded.
		if mv := n.modelsVerdict(eg); !mv.OK {
			st.Warnings = append(st.Warnings, control.Warning{Code: string(mv.Code), Text: reasons.Text(mv.Code), Detail: mv.Message})
		}
	}
	sort.Strings(st.ProvidersKeyed)
	var reloadWarnings []control.Warning
	st.Reload, reloadWarnings = n.reloadState()
	st.Warnings = append(st.Warnings, reloadWarnings...)
	var wallWarnings []control.Warning
	st.Wall, wallWarnings = n.wallStatus()
	st.Warnings = append(st.Warnings, wallWarnings...)
	n.fillAutoReply(&st)
	if st.Warnings == nil {
		st.Warnings = []control.Warning{}
	}
	return st
}

func helperDetail(hs privsep.Status) string {
	d := hs.Name + " is " + string(hs.State)
	if hs.State == privsep.StateUnresponsive {
		return d + " (pid " + strconv.Itoa(hs.PID) + ", no answer for " + strconv.FormatInt(hs.UnresponsiveSeconds, 10) + "s; runs fail closed)"
	}
	if hs.LastError != "" {
		d += " (last error: " + hs.LastError + ", restarts: " + strconv.Itoa(hs.Restarts) + ")"
	}
	return d
}

func (n *Node) listEvidence(r *http.Request) (any, error) {
	q := r.URL.Query()
	opts := store.ListOptions{Kind: q.Get("kind"), Peer: q.Get("peer")}
	if s := q.Get("since"); s != "" {
		t, err := parseSince(s, time.Now())
		if err != nil {
			return nil, control.BadRequestError("since: %v", err)
		}
		opts.Since = t
	}
	if s := q.Get("limit"); s != "" {
		l, err := strconv.Atoi(s)
		if err != nil || l < 0 {
			return nil, control.BadRequestError("limit: %q is not a non-negative number", s)
		}
		opts.Limit = l
	}
	// A page of the timeline: the entries before a sequence number, the newest first page.
	if s := q.Get("before"); s != "" {
		b, err := strconv.ParseInt(s, 10, 64)
		if err != nil || b < 1 {
			return nil, control.BadRequestError("before: %q is not a sequence number", s)
		}
		opts.Before = b
	}
	switch s := q.Get("newest"); s {
	case "", "false":
	case "true":
		opts.Newest = true
	default:
		return nil, control.BadRequestError("newest: %q is not true or false", s)
	}
	entries, err := n.store.List(r.Context(), opts)
	if err != nil {
		return nil, err
	}
	out := make([]control.EvidenceEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, evidenceJSON(e))
	}
	return out, nil
}

// parseSince accepts RFC 3339 times, dates (YYYY-MM-DD, local) and durations back from now
// ("2h", "30m").
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errors.New("want an RFC 3339 time, a date (2006-01-02) or a duration such as 2h")
}

func (n *Node) verifyEvidence(r *http.Request) (any, error) {
	res, err := n.store.Verify(r.Context(), n.id.Public())
	if err != nil {
		var ce *store.ChainError
		if errors.As(err, &ce) {
			return control.VerifyAnswer{OK: false, Entries: res.Entries, BadSeq: ce.Seq, Error: ce.Error()}, nil
		}
		return nil, err
	}
	return control.VerifyAnswer{OK: true, Entries: res.Entries, Head: hex.EncodeToString(res.Head[:])}, nil
}

// noteEvidence lets the operator record a note in the chain (`anet evidence note TEXT`).
func (n *Node) noteEvidence(r *http.Request) (any, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return nil, err
	}
	in.Text = strings.TrimSpace(in.Text)
	if in.Text == "" || len(in.Text) > 4096 {
		return nil, control.BadRequestError("text: must be 1 to 4096 bytes")
	}
	e, err := n.store.Append(r.Context(), n.id, store.EntryInput{Kind: "operator_note", Details: map[string]string{"text": in.Text}})
	if err != nil {
		return nil, err
	}
	return evidenceJSON(e), nil
}

// decodeJSON reads a request body of at most 1 MiB and refuses unknown fields, so a typo in
// a client is an error rather than a silently ignored setting.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return control.BadRequestError("body: %v", err)
	}
	return nil
}

// evidenceJSON is an entry as the control API and `anet evidence show --json` give it:
// hashes in hex, the signature in base64, details as the stored JSON object.
func evidenceJSON(e store.Entry) control.EvidenceEntry {
	return control.EvidenceEntry{
		Seq: e.Seq, Time: e.Time, Kind: e.Kind, Peer: e.Peer, Interaction: e.Interaction, Details: e.Details,
		PrevHash: hex.EncodeToString(e.PrevHash[:]),
		Hash:     hex.EncodeToString(e.Hash[:]),
		Sig:      base64.StdEncoding.EncodeToString(e.Sig),
	}
}
