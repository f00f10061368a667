//go:build !linux

package launch

import (
	"errors"
	"fmt"
	"runtime"

	"anet.dev/anet/pkg/sandbox/attack"
)

// plantCanaries: the attack battery and its host canaries (abstract sockets, /proc) are
// Linux's; a backend for another platform brings its own.
func plantCanaries(SelfTestOptions) (attack.Env, func(), error) {
	return attack.Env{}, nil, fmt.Errorf("the attack battery has no canaries for %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
