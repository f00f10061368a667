package reasons

// macOS sandbox codes (M1, F2): the Seatbelt backend reports them, and the daemon, which does
// not link the backend, shows them in status and branches on them.
const (
	// NoSandboxExec: /usr/bin/sandbox-exec is missing or not executable.
	NoSandboxExec Code = "no_sandbox_exec"
	// SelfCheckFailed: an item of the self-check that runs before every turn, inside the run's
	// own profile, failed; the detail names the item.
	SelfCheckFailed Code = "selfcheck_failed"
)

// seatbeltCodes are the catalog's entries of the Seatbelt backend's codes.
var seatbeltCodes = []Entry{
	{Code: NoSandboxExec, Kind: KindSandbox, Text: "/usr/bin/sandbox-exec (macOS Seatbelt) is missing or not executable: untrusted tasks cannot run on this Mac", Requirement: "M1"},
	{Code: SelfCheckFailed, Kind: KindSandbox, Text: "the sandbox self-check run before the turn found a protection not in force, so the turn did not run; see the failed item with anet doctor", Requirement: "M1"},
}
