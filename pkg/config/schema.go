package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/money"
)

// field is one key of the schema: a section (children) or a leaf that converts its YAML value
// into the typed Config and back. Decoding only converts; ranges and allowed values are
// checked by Validate, so that a Config built in code meets the same rules.
type field struct {
	name     string
	children []*field
	list     bool // a list of strings (egress_allow): Set takes comma-separated values
	integer  bool // Set writes the value as a YAML integer
	decode   func(c *Config, n *yaml.Node) error
	format   func(c Config) string // scalars only
	items    func(c Config) []string
}

var schema = &field{children: []*field{
	stringField("listen", func(c *Config) *string { return &c.Listen }),
	stringField("keys_file", func(c *Config) *string { return &c.KeysFile }),
	stringField("log_level", func(c *Config) *LogLevel { return &c.LogLevel }),
	{name: "auto_reply", children: []*field{
		stringField("backend", func(c *Config) *Backend { return &c.AutoReply.Backend }),
		stringField("agent", func(c *Config) *Agent { return &c.AutoReply.Agent }),
		stringField("trusted", func(c *Config) *Mode { return &c.AutoReply.Trusted }),
		stringField("untrusted", func(c *Config) *Mode { return &c.AutoReply.Untrusted }),
		stringField("model", func(c *Config) *string { return &c.AutoReply.Model }),
		stringField("api_base", func(c *Config) *string { return &c.AutoReply.APIBase }),
		stringField("agent_runtime", func(c *Config) *string { return &c.AutoReply.AgentRuntime }),
		secondsField("api_timeout_seconds", func(c *Config) *time.Duration { return &c.AutoReply.APITimeout }),
		stringField("work_dir", func(c *Config) *string { return &c.AutoReply.WorkDir }),
		durationField("work_retention", func(c *Config) *time.Duration { return &c.AutoReply.WorkRetention }),
		listField("egress_allow", func(c *Config) *[]string { return &c.AutoReply.EgressAllow }),
		{name: "sandbox", children: []*field{
			intField("runs_per_day", func(c *Config) *int { return &c.AutoReply.Sandbox.RunsPerDay }),
			intField("runs_per_peer_per_day", func(c *Config) *int { return &c.AutoReply.Sandbox.RunsPerPeerPerDay }),
			moneyField("spend_per_day", func(c *Config) *money.Micros { return &c.AutoReply.Sandbox.SpendPerDay }),
			moneyField("spend_per_peer_per_day", func(c *Config) *money.Micros { return &c.AutoReply.Sandbox.SpendPerPeerPerDay }),
			sizeField("memory_max", func(c *Config) *int64 { return &c.AutoReply.Sandbox.MemoryMax }),
			intField("tasks_max", func(c *Config) *int { return &c.AutoReply.Sandbox.TasksMax }),
			sizeField("disk_max", func(c *Config) *int64 { return &c.AutoReply.Sandbox.DiskMax }),
			stringField("isolation", func(c *Config) *Isolation { return &c.AutoReply.Sandbox.Isolation }),
			stringField("vm_accel", func(c *Config) *VMAccel { return &c.AutoReply.Sandbox.VMAccel }),
		}},
	}},
	{name: "intake", children: []*field{
		sizeField("stranger_pending_max", func(c *Config) *int64 { return &c.Intake.StrangerPendingMax }),
		sizeField("strangers_pending_max", func(c *Config) *int64 { return &c.Intake.StrangersPendingMax }),
		sizeField("disk_free_min", func(c *Config) *int64 { return &c.Intake.DiskFreeMin }),
	}},
	{name: "dashboard", children: []*field{
		stringField("listen", func(c *Config) *string { return &c.Dashboard.Listen }),
		stringField("metrics_token_file", func(c *Config) *string { return &c.Dashboard.MetricsTokenFile }),
	}},
}}

// lookup finds the field at a dotted key path.
func lookup(key string) (*field, error) {
	f := schema
	var path []string
	for _, part := range strings.Split(key, ".") {
		next := f.child(part)
		if next == nil {
			return nil, unknownKey(f, append(path, part))
		}
		path = append(path, part)
		f = next
	}
	return f, nil
}

func (f *field) child(name string) *field {
	for _, c := range f.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (f *field) known() string {
	names := make([]string, len(f.children))
	for i, c := range f.children {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func unknownKey(parent *field, path []string) error {
	return &Error{Key: strings.Join(path, "."), bare: true,
		Msg: fmt.Sprintf("unknown key %q (known: %s)", strings.Join(path, "."), parent.known())}
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!null":
		return "no value"
	case "!!int":
		return fmt.Sprintf("the integer %s (quote it to make it a string)", n.Value)
	case "!!float":
		return fmt.Sprintf("the number %s", n.Value)
	case "!!bool":
		return fmt.Sprintf("the boolean %s", n.Value)
	case "!!str":
		return fmt.Sprintf("the string %q", n.Value)
	}
	return fmt.Sprintf("a value tagged %s", n.ShortTag())
}

func scalarString(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", fmt.Errorf("expected a string, got %s", describe(n))
	}
	return n.Value, nil
}

// stringField is a string or a string-typed enum (log_level, agent, …); the allowed values are
// checked by Validate.
func stringField[T ~string](name string, ptr func(*Config) *T) *field {
	return &field{name: name,
		decode: func(c *Config, n *yaml.Node) error {
			s, err := scalarString(n)
			*ptr(c) = T(s)
			return err
		},
		format: func(c Config) string { return string(*ptr(&c)) },
	}
}

func intValue(n *yaml.Node) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, fmt.Errorf("expected an integer, got %s", describe(n))
	}
	if err := decimalOnly(n); err != nil {
		return 0, err
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		return 0, fmt.Errorf("%s is not an integer that fits in 64 bits", n.Value)
	}
	return v, nil
}

func intField(name string, ptr func(*Config) *int) *field {
	return &field{name: name, integer: true,
		decode: func(c *Config, n *yaml.Node) error {
			v, err := intValue(n)
			if err == nil && int64(int(v)) != v {
				err = fmt.Errorf("%s is too large", n.Value)
			}
			*ptr(c) = int(v)
			return err
		},
		format: func(c Config) string { return strconv.Itoa(*ptr(&c)) },
	}
}

func secondsField(name string, ptr func(*Config) *time.Duration) *field {
	return &field{name: name, integer: true,
		decode: func(c *Config, n *yaml.Node) error {
			v, err := intValue(n)
			if err != nil {
				return err
			}
			// Refuse here what would overflow the multiplication into a plausible value.
			if v < -(1<<31) || v > 1<<31 {
				return fmt.Errorf("%s is out of range (allowed: whole seconds, 1 to 86400)", n.Value)
			}
			*ptr(c) = time.Duration(v) * time.Second
			return nil
		},
		format: func(c Config) string { return strconv.FormatInt(int64(*ptr(&c)/time.Second), 10) },
	}
}

// unitScalar returns the text of a scalar that may be written as a number or a string (sizes
// and durations: `disk_max: 1048576` and `work_retention: 0` are fine unquoted).
func unitScalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		return "", fmt.Errorf("expected %s, got %s", what, describe(n))
	}
	if n.ShortTag() == "!!int" {
		if err := decimalOnly(n); err != nil {
			return "", err
		}
	}
	return n.Value, nil
}

// decimalOnly refuses an integer written in any form but plain decimal digits: yaml.v3 reads
// 010 as 8 and accepts 0x10, 0o17, 0b101, +5 and 1_000, so `runs_per_day: 010` would be
// enforced as 8 while the operator reads ten.
func decimalOnly(n *yaml.Node) error {
	if !isDecimal(n.Value) {
		return fmt.Errorf("%q is not a decimal integer (write it in the digits 0-9, without a leading 0, +, _ or a 0x, 0o or 0b prefix)", n.Value)
	}
	return nil
}

// isDecimal reports a canonical decimal integer: an optional '-' and digits without a
// leading zero (0 itself excepted).
func isDecimal(s string) bool {
	t := strings.TrimPrefix(s, "-")
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return false
	}
	if t == "0" {
		return s == "0"
	}
	return t[0] != '0'
}

func durationField(name string, ptr func(*Config) *time.Duration) *field {
	return &field{name: name,
		decode: func(c *Config, n *yaml.Node) error {
			s, err := unitScalar(n, "a duration such as 168h or 7d")
			if err != nil {
				return err
			}
			d, err := ParseDuration(s)
			*ptr(c) = d
			return err
		},
		format: func(c Config) string { return FormatDuration(*ptr(&c)) },
	}
}

func sizeField(name string, ptr func(*Config) *int64) *field {
	return &field{name: name,
		decode: func(c *Config, n *yaml.Node) error {
			s, err := unitScalar(n, "a size such as 2GiB")
			if err != nil {
				return err
			}
			v, err := limits.ParseSize(s)
			*ptr(c) = v
			return err
		},
		format: func(c Config) string { return limits.FormatSize(*ptr(&c)) },
	}
}

// moneyField is an amount written as a decimal ("5.00", or unquoted 5 or 5.00): the scalar's
// text is converted digit by digit, never through a float (K2).
func moneyField(name string, ptr func(*Config) *money.Micros) *field {
	return &field{name: name,
		decode: func(c *Config, n *yaml.Node) error {
			if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
				return fmt.Errorf("expected an amount such as \"5.00\", got %s", describe(n))
			}
			if n.ShortTag() == "!!int" {
				if err := decimalOnly(n); err != nil {
					return err
				}
			}
			v, err := money.ParseDecimal(n.Value)
			*ptr(c) = v
			return err
		},
		format: func(c Config) string { return ptr(&c).String() },
	}
}

// itemError reports a problem in one list item, on that item's own line.
type itemError struct {
	line int
	err  error
}

func (e *itemError) Error() string { return e.err.Error() }

func listField(name string, ptr func(*Config) *[]string) *field {
	return &field{name: name, list: true,
		decode: func(c *Config, n *yaml.Node) error {
			// An empty `egress_allow:` (every entry commented out) means an empty list.
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
				*ptr(c) = nil
				return nil
			}
			if n.Kind != yaml.SequenceNode {
				return fmt.Errorf("expected a list of host names, got %s", describe(n))
			}
			var out []string
			for i, item := range n.Content {
				s, err := scalarString(item)
				if err != nil {
					return &itemError{line: item.Line, err: fmt.Errorf("item %d: %w", i+1, err)}
				}
				out = append(out, s)
			}
			*ptr(c) = out
			return nil
		},
		items: func(c Config) []string { return *ptr(&c) },
	}
}
