package peer

import "anet.dev/anet/pkg/reasons"

// Codes a receiving node answers with in an ack (see the package doc). Transient codes make
// the sender retry with back-off; the others end the delivery.
const (
	CodeRateLimited        reasons.Code = "peer_rate_limited"
	CodeMalformed          reasons.Code = "peer_malformed_message"
	CodeBadSignature       reasons.Code = "peer_bad_signature"
	CodeSenderMismatch     reasons.Code = "peer_sender_mismatch"
	CodeWrongRecipient     reasons.Code = "peer_wrong_recipient"
	CodeReplayWindow       reasons.Code = "peer_replay_window"
	CodeDuplicate          reasons.Code = "peer_duplicate_message"
	CodeIDReused           reasons.Code = "peer_message_id_reused"
	CodeInteractionReused  reasons.Code = "peer_interaction_reused"
	CodeUnknownInteraction reasons.Code = "peer_unknown_interaction"
	CodeAlreadyAnswered    reasons.Code = "peer_already_answered"
	CodeWrongAID           reasons.Code = "peer_wrong_aid"
	CodePeerQuota          reasons.Code = "peer_quota_exceeded"
	CodeStrangersQuota     reasons.Code = "strangers_quota_exceeded"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: CodeRateLimited, Kind: reasons.KindNode, Text: "the receiving node accepts only so many messages per peer per minute; the message was not stored, send it again later"},
		reasons.Entry{Code: CodeMalformed, Kind: reasons.KindNode, Text: "the message does not follow the anet-msg-v1 encoding"},
		reasons.Entry{Code: CodeBadSignature, Kind: reasons.KindNode, Text: "the message signature does not verify with the sender's key; it was altered or signed by another key"},
		reasons.Entry{Code: CodeSenderMismatch, Kind: reasons.KindNode, Text: "the message names a sender other than the node that connected"},
		reasons.Entry{Code: CodeWrongRecipient, Kind: reasons.KindNode, Text: "the message is addressed to another node"},
		reasons.Entry{Code: CodeReplayWindow, Kind: reasons.KindNode, Text: "the message's sent time is outside the accepted window (clock skew or a replayed message)"},
		reasons.Entry{Code: CodeDuplicate, Kind: reasons.KindNode, Text: "a message with this id from this peer was already accepted; it is not stored twice"},
		reasons.Entry{Code: CodeIDReused, Kind: reasons.KindNode, Text: "this message id was already used by this peer for a different message"},
		reasons.Entry{Code: CodeInteractionReused, Kind: reasons.KindNode, Text: "this peer already sent a task with this interaction id"},
		reasons.Entry{Code: CodeUnknownInteraction, Kind: reasons.KindNode, Text: "no task with this interaction id was sent to this peer"},
		reasons.Entry{Code: CodeAlreadyAnswered, Kind: reasons.KindNode, Text: "this interaction already has an answer"},
		reasons.Entry{Code: CodeWrongAID, Kind: reasons.KindNode, Text: "the node at this address holds a different key than the expected aid"},
		reasons.Entry{Code: CodePeerQuota, Kind: reasons.KindNode, Requirement: "N1", Text: "the receiving node holds as many unanswered tasks from this sender as it keeps for one peer it does not know; send it again once earlier tasks are answered"},
		reasons.Entry{Code: CodeStrangersQuota, Kind: reasons.KindNode, Requirement: "N1", Text: "the receiving node holds as many unanswered tasks from peers it does not know as it keeps for all of them together; send it again later"},
	)
}

// Transient reports whether a refusal with code c may succeed when sent again later.
func Transient(c reasons.Code) bool {
	switch c {
	case CodeRateLimited, CodeReplayWindow, reasons.Internal, CodePeerQuota, CodeStrangersQuota, reasons.DiskLow:
		return true
	}
	return false
}
