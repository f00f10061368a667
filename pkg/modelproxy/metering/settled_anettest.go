//go:build anettest

package metering

// AnetTestSettled blocks until no request is in flight: a test's client can have a whole
// answer before the proxy's handler has settled it. Test builds only.
func (m *Meter) AnetTestSettled() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.inflight > 0 {
		m.idle.Wait()
	}
}
