package config

import (
	"fmt"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: ConfigInvalid, Kind: reasons.KindConfig,
			Text: "the configuration file is invalid; the message names the file, line, key and what is allowed"},
		reasons.Entry{Code: KeysFileExposed, Kind: reasons.KindConfig,
			Text: "the keys file is readable by other users or owned by another user; run chmod 600 on it", Requirement: "F3"},
		reasons.Entry{Code: KeysFileInvalid, Kind: reasons.KindConfig,
			Text: "the keys file must be a regular file (not a symlink) holding a YAML map of provider names (anthropic, openai, custom) to keys", Requirement: "F3"},
		reasons.Entry{Code: EgressAllowRefused, Kind: reasons.KindConfig,
			Text: fmt.Sprintf("an egress allow-list entry breaks a rule: each entry a full lower-case host name (no wildcard, IP address, port, localhost or local-network suffix), not a model-service host, at most %d entries", limits.AllowListEntries), Requirement: "H2"},
		reasons.Entry{Code: ConfigFileExposed, Kind: reasons.KindConfig,
			Text: "the config file can be changed by another user; it decides where keys are sent, so it must be yours (or root's) and not writable by group or others", Requirement: "F3"},
		reasons.Entry{Code: ConfigMissing, Kind: reasons.KindConfig,
			Text: "the config file named with --config does not exist", Requirement: "C4"},
		reasons.Entry{Code: SocketPathTooLong, Kind: reasons.KindConfig,
			Text: fmt.Sprintf("a unix socket of the node would be longer than the %d bytes a socket address holds; set XDG_RUNTIME_DIR to a shorter directory", MaxSocketPath), Requirement: "C4"},
		reasons.Entry{Code: PrivateDirUnsafe, Kind: reasons.KindConfig,
			Text: "a private directory of the node is a symlink, not a directory, owned by another user or open to other users", Requirement: "S3"},
	)
}

// Reason returns the reason code of a configuration error: the rule's own code, or
// config_invalid.
func (e *Error) Reason() reasons.Code {
	if e.Code != "" {
		return e.Code
	}
	return ConfigInvalid
}
