//go:build noautoreply

package node

import "context"

// startAutoReply does nothing: auto-reply is not in this build (C5). With no engine the peer
// service leaves every task in the inbox for the operator.
func (n *Node) startAutoReply(context.Context) error { return nil }

// warnSetup does nothing: with no auto-reply there is no agent or key to miss.
func (n *Node) warnSetup(context.Context) {}
