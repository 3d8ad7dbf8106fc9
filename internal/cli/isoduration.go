package cli

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"
	"time"
)

// isoDuration matches what Java's Duration.parse accepts, which is what
// kafka-consumer-groups --by-duration takes: PnDTnHnMn.nS, each number
// optionally signed, the whole optionally negated, case-insensitive,
// fractions only on seconds (with '.' or ',').
var isoDuration = regexp.MustCompile(`^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration reads an ISO-8601 duration such as P1DT2H, PT15M or
// PT0.5S.
func parseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("--by-duration %q: want an ISO-8601 duration PnDTnHnMnS, e.g. PT15M or P1DT12H", s)
	m := isoDuration.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	// "P", "PT" and "P1DT" name no amount (Java refuses them too).
	if m == nil || (m[2] == "" && m[4] == "" && m[5] == "" && m[6] == "") || (m[3] == "T") {
		return 0, bad
	}
	total := new(big.Int)
	add := func(num string, unit time.Duration) bool {
		if num == "" {
			return true
		}
		n, ok := new(big.Int).SetString(strings.TrimPrefix(num, "+"), 10)
		if !ok {
			return false
		}
		total.Add(total, n.Mul(n, big.NewInt(int64(unit))))
		return true
	}
	if !add(m[2], 24*time.Hour) || !add(m[4], time.Hour) || !add(m[5], time.Minute) || !add(m[6], time.Second) {
		return 0, bad
	}
	if frac := m[7]; frac != "" {
		ns, _ := new(big.Int).SetString((frac + "000000000")[:9], 10)
		// The fraction takes the sign of its seconds, as in Java: PT-1.5S
		// is minus one and a half seconds.
		if strings.HasPrefix(m[6], "-") {
			ns.Neg(ns)
		}
		total.Add(total, ns)
	}
	if m[1] == "-" {
		total.Neg(total)
	}
	if !total.IsInt64() || total.Int64() == math.MinInt64 {
		return 0, fmt.Errorf("--by-duration %q: too long", s)
	}
	return time.Duration(total.Int64()), nil
}
