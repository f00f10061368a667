package peer

// Observer hears what the peer side admits, turns away and refuses, for the node's metrics
// (N1, F1). Its methods run on the listener's and the engine's paths: they must be cheap and
// must not block. A nil Observer in the options hears nothing.
type Observer interface {
	// IntakeAdmitted: intake stored a message from a sender of class (stranger, known,
	// trusted).
	IntakeAdmitted(class string)
	// IntakeTurnedAway: a message was refused with a reason code, or a connection was
	// turned away or closed early for an admission reason; class is Unauthenticated when
	// the key was not known yet.
	IntakeTurnedAway(class, code string)
	// Refused: a refusal with code was queued for the peer that sent a task.
	Refused(code string)
}

// Unauthenticated is the class a connection turned away before its handshake ended is
// counted under: without a key it has no class yet.
const Unauthenticated = "unauthenticated"

type noObserver struct{}

func (noObserver) IntakeAdmitted(string)           {}
func (noObserver) IntakeTurnedAway(string, string) {}
func (noObserver) Refused(string)                  {}
