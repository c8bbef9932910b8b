package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Distribution is how a workload picks row ids, after sysbench's
// --rand-type (whose default is special).
type Distribution string

// The distributions of sysbench 1.0 (sb_rand.c), with its default options.
const (
	// DistSpecial: 75 % of ids fall in the middle 1 % of the range
	// (--rand-spec-pct=1 --rand-spec-res=75), the rest gaussian-like over
	// the whole range (the mean of 12 uniform values). sysbench's default:
	// a small set of hot rows, as in real OLTP.
	DistSpecial Distribution = "special"
	// DistUniform: every id equally likely.
	DistUniform Distribution = "uniform"
	// DistGaussian: the mean of 12 uniform values over the range.
	DistGaussian Distribution = "gaussian"
	// DistPareto: id = 1 + n·u^(ln h / ln(1-h)) with h = 0.2
	// (--rand-pareto-h): the 80/20 rule, low ids hottest.
	DistPareto Distribution = "pareto"
)

// Distributions lists the known distributions, sysbench's default first.
var Distributions = []Distribution{DistSpecial, DistUniform, DistGaussian, DistPareto}

// ParseDistribution checks a --rand-type value; "" is DistSpecial.
func ParseDistribution(s string) (Distribution, error) {
	if s == "" {
		return DistSpecial, nil
	}
	for _, d := range Distributions {
		if string(d) == s {
			return d, nil
		}
	}
	names := make([]string, len(Distributions))
	for i, d := range Distributions {
		names[i] = string(d)
	}
	return "", fmt.Errorf("%w: --rand-type %q (known: %s)", ErrBadStep, s, strings.Join(names, ", "))
}

// sysbench's parameters of the special and pareto distributions.
const (
	specIter   = 12
	specPct    = 1
	specRes    = 75
	paretoH    = 0.2
	gaussCount = specIter
)

var paretoPower = math.Log(paretoH) / math.Log(1-paretoH)

// pick returns an id in 1..n drawn from d.
func (d Distribution) pick(r *rand.Rand, n int) int {
	if n <= 1 {
		return 1
	}
	switch d {
	case DistUniform:
		return 1 + r.IntN(n)
	case DistGaussian:
		return 1 + gaussian(r, n)
	case DistPareto:
		return 1 + min(int(float64(n)*math.Pow(r.Float64(), paretoPower)), n-1)
	default: // DistSpecial, as sb_rand_special
		rangeSize := int(float64(n) * 100 / (100 - specRes))
		res := r.IntN(rangeSize)
		if res < n {
			return 1 + gaussian(r, n)
		}
		hot := max(n*specPct/100, 1)
		return 1 + (res%hot + n/2 - n*specPct/200)
	}
}

// gaussian is the mean of specIter uniform draws scaled to 0..n-1.
func gaussian(r *rand.Rand, n int) int {
	var sum float64
	for range gaussCount {
		sum += r.Float64()
	}
	return min(int(float64(n)*sum/gaussCount), n-1)
}
