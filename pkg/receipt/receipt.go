// Package receipt is what one run reached, item by item: a receipt for every tunnel the
// CONNECT egress proxy opened or refused and for every model request the endpoint answered
// (H1–H7, R1, K1). anet-egress collects them while the run lasts and hands them to anetd with
// the run's usage; anetd keeps them in the store beside the run, and the run's
// turn_completed evidence carries their digest and counts, so the chain vouches for every
// receipt without an entry per request.
package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// MaxPerKind bounds the receipts one run keeps of each kind. Model requests are bounded by
// R1 and tunnels by its tunnel caps, but refused CONNECTs are not: an agent that asks for a
// refused host in a loop must not grow the store without end. What passes the bound is
// counted (Set.DroppedTunnels, Set.DroppedModel), never silently lost.
const MaxPerKind = 256

// MaxTextBytes bounds every text field of a receipt: names and paths are the agent's text.
const MaxTextBytes = 255

// maxRuleBytes bounds Rule, a requirement id of docs/requirements.md ("H4", "E11").
const maxRuleBytes = 16

// End says how a tunnel or a model request ended.
type End string

const (
	// Closed: a side closed the tunnel, or the request was answered (by the upstream or
	// by the node).
	Closed End = "closed"
	// Capped: a limit of R1 ended it; Code names which.
	Capped End = "cap"
	// Refused: a rule refused it before anything was forwarded; Code and Rule say which.
	Refused End = "refused"
	// Failed: the node could not reach the destination (dial, TLS or upstream failure).
	Failed End = "failed"
)

func (e End) valid() bool {
	switch e {
	case Closed, Capped, Refused, Failed:
		return true
	}
	return false
}

// Tunnel is one CONNECT of a run.
type Tunnel struct {
	// Host and Port are what the agent asked for (the CONNECT target).
	Host string `json:"host"`
	Port int    `json:"port"`
	// Dialled is the address the node dialled ("203.0.113.7:443"); "" when it dialled none.
	Dialled string `json:"dialled,omitempty"`
	// SNI is the server name of the agent's ClientHello (H6); "" when none was read.
	SNI string `json:"sni,omitempty"`
	// Sent and Received are the bytes the agent sent through the tunnel and got back.
	Sent     int64     `json:"bytes_sent"`
	Received int64     `json:"bytes_received"`
	Opened   time.Time `json:"opened"`
	Ended    time.Time `json:"ended"`
	End      End       `json:"end"`
	// Code is the refusal or the cap that ended it; "" when it closed normally.
	Code reasons.Code `json:"code,omitempty"`
	// Rule is the requirement Code enforces ("H4"), from the reasons catalog.
	Rule string `json:"rule,omitempty"`
}

// Model is one request of a run to its model endpoint.
type Model struct {
	// API is the upstream's API ("anthropic", "openai"); Method and Path are the request's.
	API    string `json:"api"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Status is the HTTP status the agent got.
	Status int `json:"status"`
	// Model is the model the request was forwarded with (E2); "" when it was not forwarded.
	Model string `json:"model,omitempty"`
	// TokensIn counts every input token class (input, cache write, cache read); TokensOut
	// output tokens, reasoning included (K1).
	TokensIn  int64        `json:"tokens_in"`
	TokensOut int64        `json:"tokens_out"`
	Cost      money.Micros `json:"cost_micros"`
	Started   time.Time    `json:"started"`
	Ended     time.Time    `json:"ended"`
	End       End          `json:"end"`
	Code      reasons.Code `json:"code,omitempty"`
	Rule      string       `json:"rule,omitempty"`
}

// Set is one run's receipts in the order they ended.
type Set struct {
	Tunnels []Tunnel `json:"tunnels,omitempty"`
	Model   []Model  `json:"model,omitempty"`
	// DroppedTunnels and DroppedModel count receipts past MaxPerKind.
	DroppedTunnels int `json:"dropped_tunnels,omitempty"`
	DroppedModel   int `json:"dropped_model,omitempty"`
}

// Counts is what the chain records of a set beside its digest.
type Counts struct {
	Digest  string `json:"digest"`
	Tunnels int    `json:"tunnels"`
	Model   int    `json:"model"`
	// Refused counts receipts of either kind that ended Refused.
	Refused int `json:"refused"`
	Dropped int `json:"dropped,omitempty"`
}

// Log collects receipts of one kind while a run lasts; safe for concurrent use. The zero
// value is ready.
type Log[T any] struct {
	mu      sync.Mutex
	items   []T
	dropped int
}

// Add keeps r, or counts it as dropped once MaxPerKind are kept.
func (l *Log[T]) Add(r T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) >= MaxPerKind {
		l.dropped++
		return
	}
	l.items = append(l.items, r)
}

// Snapshot returns a copy of the receipts kept and the count dropped.
func (l *Log[T]) Snapshot() ([]T, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...), l.dropped
}

// RuleOf is the requirement a code enforces, from the catalog ("" for none).
func RuleOf(c reasons.Code) string {
	if c == "" {
		return ""
	}
	e, _ := reasons.Lookup(c)
	return e.Requirement
}

// Clip bounds agent-chosen text for a receipt to MaxTextBytes, ellipsis included, as valid
// UTF-8: JSON would replace each invalid byte with three, so a receipt that passed Validate
// here could fail it once decoded by anetd.
func Clip(s string) string {
	if s = strings.ToValidUTF8(s, "\uFFFD"); len(s) <= MaxTextBytes {
		return s
	}
	return reasons.Clip(s, MaxTextBytes-len("…"))
}

// Of builds a run's set from the two logs' snapshots.
func Of(tunnels []Tunnel, droppedTunnels int, model []Model, droppedModel int) Set {
	s := Set{Tunnels: tunnels, Model: model, DroppedTunnels: droppedTunnels, DroppedModel: droppedModel}
	s.normalise()
	return s
}

// normalise is the form Encode writes and Decode reads back: times in UTC, no empty list
// (omitempty drops it, so a decoded set has none either).
func (s *Set) normalise() {
	if len(s.Tunnels) == 0 {
		s.Tunnels = nil
	}
	if len(s.Model) == 0 {
		s.Model = nil
	}
	for i := range s.Tunnels {
		s.Tunnels[i].Opened, s.Tunnels[i].Ended = s.Tunnels[i].Opened.UTC(), s.Tunnels[i].Ended.UTC()
	}
	for i := range s.Model {
		s.Model[i].Started, s.Model[i].Ended = s.Model[i].Started.UTC(), s.Model[i].Ended.UTC()
	}
}

// Encode is the set's stored form; the digest is taken over exactly these bytes, so the
// store keeps them verbatim and a verifier needs no canonical re-encoding.
func Encode(s Set) ([]byte, error) {
	// A copy: normalising must not write through to the caller's slices.
	s.Tunnels, s.Model = append([]Tunnel(nil), s.Tunnels...), append([]Model(nil), s.Model...)
	s.normalise()
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode receipts: %w", err)
	}
	return b, nil
}

// Digest is "sha256:" and the hex SHA-256 of an encoded set.
func Digest(encoded []byte) string {
	sum := sha256.Sum256(encoded)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CountsOf is the chain's summary of an encoded set.
func CountsOf(s Set, encoded []byte) Counts {
	c := Counts{Digest: Digest(encoded), Tunnels: len(s.Tunnels), Model: len(s.Model), Dropped: addCount(s.DroppedTunnels, s.DroppedModel)}
	for _, t := range s.Tunnels {
		if t.End == Refused {
			c.Refused++
		}
	}
	for _, m := range s.Model {
		if m.End == Refused {
			c.Refused++
		}
	}
	return c
}

// Decode reads a stored or received set and checks it (Validate): the bytes come from
// anet-egress over its socket, or from the store file. The set is normalised as Encode
// writes it, so Encode(Decode(b)) decodes to the same set.
func Decode(b []byte) (Set, error) {
	var s Set
	if err := json.Unmarshal(b, &s); err != nil {
		return Set{}, fmt.Errorf("receipts: %w", err)
	}
	s.normalise()
	if err := s.Validate(); err != nil {
		return Set{}, err
	}
	return s, nil
}

// Validate checks bounds and values; errors name the receipt and field.
func (s Set) Validate() error {
	if len(s.Tunnels) > MaxPerKind || len(s.Model) > MaxPerKind {
		return fmt.Errorf("receipts: %d tunnels and %d model requests, more than %d of a kind", len(s.Tunnels), len(s.Model), MaxPerKind)
	}
	if s.DroppedTunnels < 0 || s.DroppedModel < 0 {
		return errors.New("receipts: negative dropped count")
	}
	for i, t := range s.Tunnels {
		if err := t.validate(); err != nil {
			return fmt.Errorf("receipts: tunnel %d: %w", i, err)
		}
	}
	for i, m := range s.Model {
		if err := m.validate(); err != nil {
			return fmt.Errorf("receipts: model request %d: %w", i, err)
		}
	}
	return nil
}

func (t Tunnel) validate() error {
	switch {
	case len(t.Host) > MaxTextBytes+len("…"), len(t.SNI) > MaxTextBytes+len("…"), len(t.Dialled) > MaxTextBytes:
		return errors.New("host, sni or dialled: too long")
	case len(t.Rule) > maxRuleBytes:
		return errors.New("rule: too long")
	case t.Port < 0 || t.Port > 65535:
		return fmt.Errorf("port %d: out of range", t.Port)
	case t.Sent < 0 || t.Received < 0:
		return errors.New("bytes_sent or bytes_received: negative")
	case !t.End.valid():
		return fmt.Errorf("end %q: not one of closed, cap, refused, failed", t.End)
	case t.End != Closed && t.Code == "":
		return fmt.Errorf("end %q: no code", t.End)
	case !encodable(t.Opened) || !encodable(t.Ended):
		return errors.New("opened or ended: not a time of years 0 to 9999 in UTC")
	case t.Ended.Before(t.Opened):
		return errors.New("ended before opened")
	}
	return checkCode(t.Code)
}

func (m Model) validate() error {
	switch {
	case len(m.API) > MaxTextBytes, len(m.Method) > MaxTextBytes, len(m.Path) > MaxTextBytes+len("…"), len(m.Model) > MaxTextBytes+len("…"):
		return errors.New("api, method, path or model: too long")
	case len(m.Rule) > maxRuleBytes:
		return errors.New("rule: too long")
	case m.Status < 0 || m.Status > 999:
		return fmt.Errorf("status %d: out of range", m.Status)
	case m.TokensIn < 0 || m.TokensOut < 0 || m.Cost < 0:
		return errors.New("tokens or cost: negative")
	case !m.End.valid():
		return fmt.Errorf("end %q: not one of closed, cap, refused, failed", m.End)
	case m.End != Closed && m.Code == "":
		return fmt.Errorf("end %q: no code", m.End)
	case !encodable(m.Started) || !encodable(m.Ended):
		return errors.New("started or ended: not a time of years 0 to 9999 in UTC")
	case m.Ended.Before(m.Started):
		return errors.New("ended before started")
	}
	return checkCode(m.Code)
}

// encodable: Encode writes times in UTC, and JSON holds only years 0 to 9999 (a decoded
// "0000-01-01T00:00:00+01:00" is such a time of another year).
func encodable(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

func checkCode(c reasons.Code) error {
	if c == "" {
		return nil
	}
	if len(c) > 64 || strings.Trim(string(c), "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("code %q: not a reason code", reasons.Clip(string(c), 64))
	}
	return nil
}
