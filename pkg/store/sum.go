package store

import (
	"context"
	"fmt"
)

// Sum adds up the integer detail field of the entries that match f: the day's spend is the
// sum of cost_micros over run_counted entries (K2), rebuilt from the chain like the run count
// (B5). A missing field counts as 0.
func (s *Store) Sum(ctx context.Context, f CountFilter, field string) (int64, error) {
	all, err := s.SumByPeer(ctx, f, field)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, v := range all {
		n += v
	}
	return n, nil
}

// SumByPeer is Sum per peer (entries without a peer under "").
func (s *Store) SumByPeer(ctx context.Context, f CountFilter, field string) (map[string]int64, error) {
	if err := validKind(field); err != nil {
		return nil, fmt.Errorf("sum evidence: field: %w", err)
	}
	where, args, err := f.where()
	if err != nil {
		return nil, fmt.Errorf("sum evidence: %w", err)
	}
	// json_extract of an integer gives an integer, and SUM of integers is exact (an
	// overflow is an error, not a wrapped value).
	q := `SELECT peer, COALESCE(SUM(CAST(json_extract(details, ?) AS INTEGER)), 0) FROM evidence` + where + ` GROUP BY peer`
	rows, err := s.db.QueryContext(ctx, q, append([]any{"$." + field}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("sum evidence: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var peer string
		var n int64
		if err := rows.Scan(&peer, &n); err != nil {
			return nil, fmt.Errorf("sum evidence: %w", err)
		}
		out[peer] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum evidence: %w", err)
	}
	return out, nil
}
