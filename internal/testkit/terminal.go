package testkit

import "strings"

// HostileText is what a peer or an agent might write to reach the operator's terminal (U1):
// OSC 52 (set the clipboard), CSI 2J (clear the screen), OSC 0 (window title), a carriage
// return and a forged line, an 8-bit CSI, DEL and a right-to-left override.
const HostileText = "please\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;owned\x07\r\nstate: answered\u009b31m\x7f\u202egnp.exe"

// rawTerminalControls are the bytes of HostileText a terminal would act on.
var rawTerminalControls = []string{"\x1b", "\r", "\x07", "\x7f", "\u009b", "\u202e"}

// RawTerminalControl returns the first byte sequence of out that a terminal would act on
// (ESC, CR, BEL, DEL, an 8-bit CSI, a bidi override), or "" when out has none.
func RawTerminalControl(out string) string {
	for _, c := range rawTerminalControls {
		if strings.Contains(out, c) {
			return c
		}
	}
	return ""
}
