package config

import "anet.dev/anet/pkg/reasons"

func init() {
	reasons.Register(
		reasons.Entry{Code: ConfigInvalid, Kind: reasons.KindConfig,
			Text: "the configuration file is invalid; the message names the file, line, key and what is allowed"},
		reasons.Entry{Code: KeysFileExposed, Kind: reasons.KindConfig,
			Text: "the keys file is readable by other users or owned by another user; run chmod 600 on it", Requirement: "F3"},
		reasons.Entry{Code: PrivateDirUnsafe, Kind: reasons.KindConfig,
			Text: "a private directory of the node is a symlink, not a directory, owned by another user or open to other users", Requirement: "S3"},
	)
}

// Reason returns the reason code of a configuration error.
func (e *Error) Reason() reasons.Code { return ConfigInvalid }
