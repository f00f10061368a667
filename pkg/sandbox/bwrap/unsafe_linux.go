package bwrap

import "unsafe"

func unsafePtr(p *byte) unsafe.Pointer { return unsafe.Pointer(p) }
