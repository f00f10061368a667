package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Show renders the effective configuration, every key with its value (defaults included), as
// YAML that Parse reads back to the same Config.
func Show(c Config) ([]byte, error) {
	return render(sectionNode(c, schema))
}

// Get returns the value at a dotted key path: a scalar as its text, egress_allow as a
// comma-separated list (the form Set takes), a section as YAML.
func Get(c Config, key string) (string, error) {
	f, err := lookup(key)
	if err != nil {
		return "", fmt.Errorf("config get: %w", err)
	}
	switch {
	case f.children != nil:
		out, err := render(sectionNode(c, f))
		return string(out), err
	case f.list:
		return strings.Join(f.items(c), ","), nil
	}
	return f.format(c), nil
}

func render(n *yaml.Node) ([]byte, error) { return renderIndent(n, 2) }

func sectionNode(c Config, f *field) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, ch := range f.children {
		var v *yaml.Node
		switch {
		case ch.children != nil:
			v = sectionNode(c, ch)
		case ch.list:
			v = listNode(ch.items(c), yaml.FlowStyle)
		default:
			v = scalarNode(ch, ch.format(c))
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ch.name}, v)
	}
	return m
}

// scalarNode writes integers as integers and everything else as a string, which the encoder
// quotes when the text would otherwise read as another type ("123", "true").
func scalarNode(f *field, value string) *yaml.Node {
	tag := "!!str"
	if f.integer && isInteger(value) {
		tag = "!!int"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

func listNode(items []string, style yaml.Style) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: style}
	for _, it := range items {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: it})
	}
	return n
}

func isInteger(s string) bool {
	t := strings.TrimPrefix(s, "-")
	return t != "" && len(t) <= 18 && strings.Trim(t, "0123456789") == ""
}

// integerValue refuses, for `config set` of an integer key, any form but decimal digits, as
// Parse does in the file: the value is named with its key before anything is written.
func integerValue(f *field, value string) error {
	if f.integer && !isDecimal(value) {
		return fmt.Errorf("%q is not a decimal integer (write it in the digits 0-9, without a leading 0, +, _ or a 0x, 0o or 0b prefix)", value)
	}
	return nil
}
