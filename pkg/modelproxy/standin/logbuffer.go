package standin

import (
	"bytes"
	"sync"
)

// LogBuffer collects log output written from several goroutines (a proxy's handlers, the
// server's error log), for the checks that a key never reaches a log line.
type LogBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write appends p; safe from any goroutine.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
