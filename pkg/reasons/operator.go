package reasons

// Codes that tell the operator what is wrong with the node itself and how to fix it: the
// control socket cannot be reached, or the data dir's file system is full.
const (
	// NodeNotRunning: no anetd answers on the control socket (none there, or one left by an
	// anetd that stopped).
	NodeNotRunning Code = "node_not_running"
	// OtherUser: the control socket (or its directory) belongs to another user; anetd
	// answers only the user it runs as, root included.
	OtherUser Code = "other_user"
	// DiskFull: the file system under the data dir has no room for the store's next write.
	// Nothing stored is lost; writes resume once there is room.
	DiskFull Code = "disk_full"
)

// operatorCodes are the catalog's entries of this file's codes.
var operatorCodes = []Entry{
	{Code: NodeNotRunning, Kind: KindNode, Text: "anetd is not running for this user; start it with `anetd` (or `systemctl --user start anetd`)", Requirement: "C4"},
	{Code: OtherUser, Kind: KindNode, Text: "the control socket answers only the user anetd runs as (root included); run anet as that user", Requirement: "C4"},
	{Code: DiskFull, Kind: KindNode, Text: "the file system of the node's data dir is full: nothing stored is lost, but nothing new can be recorded until there is room; free space there (or move the data dir to a larger file system)", Requirement: "N1"},
}
