package main

import "strings"

// listValue is a repeatable string flag that, unlike cli.StringSliceFlag, never splits a
// value at commas: an endpoint variable's value or a path may contain one.
type listValue struct{ v []string }

func (l *listValue) Set(s string) error { l.v = append(l.v, s); return nil }
func (l *listValue) String() string     { return strings.Join(l.v, "\n") }

// list returns the values of a listValue flag.
func list(c interface{ Generic(string) any }, name string) []string {
	if l, ok := c.Generic(name).(*listValue); ok && l != nil {
		return l.v
	}
	return nil
}
