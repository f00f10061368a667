package reasons

// Spend codes (K1, K2): the model proxy refuses with them, and the daemon, which must not link
// the model proxy (it holds the keys), branches on them.
const (
	// SpendLimit refuses a model request whose worst case does not fit in what is left of
	// the run's spending allowance.
	SpendLimit Code = "spend_limit"
	// ModelUnpriced refuses to open a run with a spending allowance whose pinned model has
	// no prices: its spend could not be metered.
	ModelUnpriced Code = "model_unpriced"
)

// spendCodes are the catalog's entries of the spend codes.
var spendCodes = []Entry{
	{Code: SpendLimit, Kind: KindRule, Text: "this request could cost more than is left of this run's spending allowance; answer with what you have, or send a shorter request with a lower output limit", Requirement: "K2"},
	{Code: ModelUnpriced, Kind: KindConfig, Text: "the pinned model has no prices in the models file, so an untrusted run's spend cannot be metered; add input_price and output_price for it in the models override file", Requirement: "K1"},
}
