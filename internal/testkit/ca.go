package testkit

import "anet.dev/anet/pkg/localca"

// CA is the throw-away certificate authority of pkg/localca, under the name the tests know.
type CA = localca.Authority

// NewCA makes a CA and a leaf valid for names and 127.0.0.1, for a day (localca.New).
func NewCA(names ...string) (*CA, error) { return localca.New(names...) }
