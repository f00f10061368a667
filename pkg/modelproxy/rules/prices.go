package rules

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/money"
)

// priceText is a price as the models file writes it: a decimal (5.00, 0.10) kept as text, so
// that it converts into integer micro-units without passing through a float.
type priceText struct {
	text string
	set  bool
}

func (p *priceText) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind != yaml.ScalarNode:
		return fmt.Errorf("line %d: a price must be a decimal number", n.Line)
	case n.ShortTag() == "!!null":
		return nil
	case n.ShortTag() != "!!int" && n.ShortTag() != "!!float" && n.ShortTag() != "!!str":
		return fmt.Errorf("line %d: a price must be a decimal number, not %s", n.Line, n.ShortTag())
	}
	p.text, p.set = n.Value, true
	return nil
}

// prices converts the entry's price fields (K1). Input and output must come together; a
// cache price the list does not give is the input price. The error names the field.
func (m Model) prices() (*money.Prices, error) {
	var p money.Prices
	for _, f := range []struct {
		name string
		t    priceText
		dst  *money.Micros
	}{
		{"input_price", m.InputPrice, &p.Input}, {"output_price", m.OutputPrice, &p.Output},
		{"cache_write_price", m.CacheWritePrice, &p.CacheWrite}, {"cache_read_price", m.CacheReadPrice, &p.CacheRead},
	} {
		if !f.t.set {
			continue
		}
		v, err := money.ParseDecimal(f.t.text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = v
	}
	switch {
	case !m.InputPrice.set && !m.OutputPrice.set:
		if m.CacheWritePrice.set || m.CacheReadPrice.set {
			return nil, errors.New("input_price: cache prices need input_price and output_price")
		}
		return nil, nil
	case !m.InputPrice.set:
		return nil, errors.New("input_price: missing (output_price is set; give both)")
	case !m.OutputPrice.set:
		return nil, errors.New("output_price: missing (input_price is set; give both)")
	}
	if !m.CacheWritePrice.set {
		p.CacheWrite = p.Input
	}
	if !m.CacheReadPrice.set {
		p.CacheRead = p.Input
	}
	return &p, nil
}
