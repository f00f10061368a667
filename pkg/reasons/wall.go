package reasons

// WallUnproven: the last proof of the wall (anetd asks both helpers for their self-tests,
// signs the result into the evidence chain as wall_proved) failed. Sandboxed turns are not
// started until a proof passes, even where the probe alone passes: the probe checks five
// properties, the proof the whole battery. The requester sees sandbox_unavailable (F1); the
// detail names the failed item and its fix.
const WallUnproven Code = "wall_unproven"

// wallCodes are the catalog's entries of this file's codes.
var wallCodes = []Entry{
	{Code: WallUnproven, Kind: KindSandbox, Text: "the last proof of the wall (the helpers' self-tests) failed: sandboxed turns are refused until one passes; fix the failed item, then run anet doctor --prove", Requirement: "S7"},
}
