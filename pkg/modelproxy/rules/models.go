package rules

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

//go:embed models.yaml
var builtinModels []byte

// Constraints says what a model refuses. Nil pointers mean "no constraint".
type Constraints struct {
	ThinkingTypes    []string `yaml:"thinking_types"`
	Sampling         *bool    `yaml:"sampling"`
	AssistantPrefill *bool    `yaml:"assistant_prefill"`
}

// Model is one model of a provider.
type Model struct {
	ID string `yaml:"-"`
	// The price fields are the file's decimal text (currency units per million tokens);
	// parseCatalog converts them into Prices, exactly.
	InputPrice      priceText   `yaml:"input_price"`
	OutputPrice     priceText   `yaml:"output_price"`
	CacheWritePrice priceText   `yaml:"cache_write_price"`
	CacheReadPrice  priceText   `yaml:"cache_read_price"`
	MaxOutputTokens int         `yaml:"max_output_tokens"`
	Context1M       bool        `yaml:"context_1m"`
	Constraints     Constraints `yaml:"constraints"`
	// Prices are set when the entry gives input_price and output_price (K1); a model
	// without them can be used only by runs without a spending allowance.
	Prices *money.Prices `yaml:"-"`
}

// Provider is one provider's model list.
type Provider struct {
	Cheapest string            `yaml:"cheapest"`
	Aliases  map[string]string `yaml:"aliases"`
	Models   map[string]Model  `yaml:"models"`
}

// Catalog is the merged models data: the embedded file plus an operator override.
type Catalog struct {
	Providers map[string]Provider `yaml:"providers"`
}

// suffix1M asks for the 1M-token context window (Claude Code's `[1m]`).
const suffix1M = "[1m]"

// FileError is a models file LoadCatalog refuses: its words name the file and the field,
// and its reason is ModelsFileInvalid, so every path that checks the file (anetd --check,
// anet doctor, anet-egress check and serve) gives the same code and words (C4).
type FileError struct{ Msg string }

func (e *FileError) Error() string { return e.Msg }

// Reason is the rule's code.
func (e *FileError) Reason() reasons.Code { return ModelsFileInvalid }

// LoadCatalog returns the embedded catalog with the override file at path merged on top
// (empty path: none). A missing override file is an error: the operator named it. Every
// error is a *FileError. The catalog returned is never changed afterwards: runs share it.
func LoadCatalog(overridePath string) (*Catalog, error) {
	c, err := loadCatalog(overridePath)
	if err != nil {
		return nil, &FileError{Msg: err.Error()}
	}
	return c, nil
}

// Builtin is the embedded catalog alone, parsed once and shared; it fails only in a broken
// build.
var Builtin = sync.OnceValues(func() (*Catalog, error) { return LoadCatalog("") })

func loadCatalog(overridePath string) (*Catalog, error) {
	base, err := parseCatalog("embedded models.yaml", builtinModels)
	if err != nil {
		return nil, err
	}
	if overridePath == "" {
		return base, nil
	}
	data, err := os.ReadFile(overridePath)
	if err != nil {
		return nil, fmt.Errorf("read models file: %w", err)
	}
	over, err := parseCatalog(overridePath, data)
	if err != nil {
		return nil, err
	}
	base.merge(over)
	if err := base.validate(overridePath); err != nil {
		return nil, err
	}
	return base, nil
}

func parseCatalog(name string, data []byte) (*Catalog, error) {
	var c Catalog
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("models file %s: %w", name, err)
	}
	if c.Providers == nil {
		c.Providers = map[string]Provider{}
	}
	for pn, p := range c.Providers {
		for id, m := range p.Models {
			m.ID = id
			if m.MaxOutputTokens < 0 {
				return nil, fmt.Errorf("models file %s: providers.%s.models.%s.max_output_tokens: must not be negative", name, pn, id)
			}
			prices, err := m.prices()
			if err != nil {
				return nil, fmt.Errorf("models file %s: providers.%s.models.%s.%w", name, pn, id, err)
			}
			m.Prices = prices
			p.Models[id] = m
		}
	}
	return &c, nil
}

func (c *Catalog) merge(o *Catalog) {
	for pn, op := range o.Providers {
		p := c.Providers[pn]
		if p.Models == nil {
			p.Models = map[string]Model{}
		}
		if p.Aliases == nil {
			p.Aliases = map[string]string{}
		}
		for id, m := range op.Models {
			p.Models[id] = m
		}
		for a, id := range op.Aliases {
			p.Aliases[a] = id
		}
		if op.Cheapest != "" {
			p.Cheapest = op.Cheapest
		}
		c.Providers[pn] = p
	}
}

// validate checks that every alias and cheapest entry names a model of its provider.
func (c *Catalog) validate(name string) error {
	for pn, p := range c.Providers {
		if p.Cheapest != "" {
			if _, ok := p.Models[p.Cheapest]; !ok {
				return fmt.Errorf("models file %s: providers.%s.cheapest: %q is not in models", name, pn, p.Cheapest)
			}
		}
		for _, a := range slices.Sorted(maps.Keys(p.Aliases)) {
			if _, ok := p.Models[p.Aliases[a]]; !ok {
				return fmt.Errorf("models file %s: providers.%s.aliases.%s: %q is not in models", name, pn, a, p.Aliases[a])
			}
		}
	}
	return nil
}

// Pinned is the model every request of a run is rewritten to.
type Pinned struct {
	ID        string
	Context1M bool
	// Known is false for an id the catalog does not list (an operator's choice the node
	// forwards as given, without constraints).
	Known bool
	Model Model
}

// Resolve turns the configured model (an id, an alias, optionally with `[1m]`, or empty for
// the provider's cheapest) into the pinned model.
func (c *Catalog) Resolve(provider, configured string) (Pinned, error) {
	p := c.Providers[provider]
	name := strings.TrimSpace(configured)
	want1M := strings.HasSuffix(name, suffix1M)
	name = strings.TrimSuffix(name, suffix1M)
	if name == "" {
		if p.Cheapest == "" {
			return Pinned{}, reasons.New(reasons.NoModel, "provider "+provider)
		}
		name = p.Cheapest
	}
	if id, ok := p.Aliases[name]; ok {
		name = id
	}
	m, known := p.Models[name]
	m.ID = name
	if want1M && known && !m.Context1M {
		return Pinned{}, fmt.Errorf("resolve model %s%s: %s has no 1M-token context", name, suffix1M, name)
	}
	return Pinned{ID: name, Context1M: want1M, Known: known, Model: m}, nil
}
