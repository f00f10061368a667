package endpoint

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// E9: the endpoint's sentences are in the reason catalog.
func TestCodesRegisteredE9(t *testing.T) {
	for _, c := range []reasons.Code{NotFound, TunnelUnavailable, ConnectionLimit, TokenMissing} {
		if e, ok := reasons.Lookup(c); !ok || e.Kind != reasons.KindRule || e.Text == "" {
			t.Errorf("reasons.Lookup(%s) = %+v, %v, want a rule entry", c, e, ok)
		}
	}
}

// R1, E9: the connection sentence is built from the figure: the catalog states R1's, and a
// changed figure changes the sentence with it.
func TestConnectionSentenceFollowsTheFigureR1(t *testing.T) {
	if got, want := reasons.Text(ConnectionLimit), connectionLimitEntry(limits.EndpointConnections).Text; got != want || !strings.Contains(got, "at most 32 connections") {
		t.Errorf("catalog text = %q, want %q stating R1's 32 connections", got, want)
	}
	if got := connectionLimitEntry(5).Text; !strings.Contains(got, "at most 5 connections") {
		t.Errorf("connectionLimitEntry(5).Text = %q, want it to say \"at most 5 connections\"", got)
	}
}
