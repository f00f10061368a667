package integration

import (
	"testing"
	"time"
)

// BenchmarkIntakeUnderAttack reports, for each attack of TestIntakeUnderAttack, how long a
// trusted and a known peer's `anet send` took to reach the inbox of the node under attack,
// beside the quiet figure measured first in the same run (N1; the aim is at most 2 s for
// a trusted peer and 5 s for a known one). trusted-x and known-x are the ratios to quiet.
func BenchmarkIntakeUnderAttack(b *testing.B) {
	r := newIntakeRig(b, intakeAttackConfig)
	var quietA, quietC time.Duration
	b.Run("quiet", func(b *testing.B) {
		r.tb = b
		var sumA, sumC time.Duration
		n := 0
		for b.Loop() {
			a, c := r.quiet()
			sumA, sumC, n = sumA+a, sumC+c, n+1
		}
		quietA, quietC = sumA/time.Duration(n), sumC/time.Duration(n)
		b.ReportMetric(quietA.Seconds(), "trusted-s")
		b.ReportMetric(quietC.Seconds(), "known-s")
	})
	for _, att := range intakeAttacks() {
		b.Run(att.name, func(b *testing.B) {
			r.tb = b
			var sumA, sumC time.Duration
			n := 0
			for b.Loop() {
				a, c, _ := r.underAttack(att)
				sumA, sumC, n = sumA+a, sumC+c, n+1
			}
			a, c := sumA/time.Duration(n), sumC/time.Duration(n)
			b.ReportMetric(a.Seconds(), "trusted-s")
			b.ReportMetric(c.Seconds(), "known-s")
			if quietA > 0 && quietC > 0 {
				b.ReportMetric(float64(a)/float64(quietA), "trusted-x")
				b.ReportMetric(float64(c)/float64(quietC), "known-x")
			}
		})
	}
}
