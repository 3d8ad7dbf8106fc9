package config

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is Kafka's configuration data type, numbered as in DescribeConfigs
// v3+ (kmsg.ConfigType), so the broker can convert it with a cast.
type Type int8

// Kafka's ConfigType values.
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

// noMax marks a numeric range without an upper bound beyond the type's own.
const noMax = math.MaxInt64

// The value parsers below follow Kafka's ConfigDef: surrounding whitespace
// is ignored, numbers are decimal, booleans are true/false in any case.
// They return a *ValueError naming the key.

func parseBool(key, raw string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid(key, raw, "must be true or false")
}

// parseInt parses a Kafka SHORT, INT or LONG and checks lo <= n <= hi.
func parseInt(key, raw string, typ Type, lo, hi int64) (int64, error) {
	bits, typeMax, what := 64, int64(math.MaxInt64), "an integer"
	switch typ {
	case TypeShort:
		bits, typeMax, what = 16, math.MaxInt16, "a 16-bit integer"
	case TypeInt:
		bits, typeMax, what = 32, math.MaxInt32, "a 32-bit integer"
	}
	s := strings.TrimSpace(raw)
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, invalid(key, raw, "out of range for %s", what)
		}
		return 0, invalid(key, raw, "not an integer")
	}
	if hi >= typeMax {
		hi = noMax // the type's own limit: already checked
	}
	if err := checkRange(key, raw, n, lo, hi); err != nil {
		return 0, err
	}
	return n, nil
}

func checkRange(key, raw string, n, lo, hi int64) error {
	switch {
	case n >= lo && n <= hi:
		return nil
	case hi == noMax:
		return invalid(key, raw, "must be at least %d", lo)
	default:
		return invalid(key, raw, "must be between %d and %d", lo, hi)
	}
}

func parseDouble(key, raw string, lo, hi float64) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsNaN(f) {
		return 0, invalid(key, raw, "not a number")
	}
	if f < lo || f > hi {
		return 0, invalid(key, raw, "must be between %g and %g", lo, hi)
	}
	return f, nil
}

// parseEnum accepts exactly one of allowed (case-sensitive, as Kafka's
// ValidString is).
func parseEnum(key, raw string, allowed []string) (string, error) {
	s := strings.TrimSpace(raw)
	if !slices.Contains(allowed, s) {
		return "", invalid(key, raw, "must be one of %s", strings.Join(allowed, ", "))
	}
	return s, nil
}

// parseList splits a comma-separated list as Kafka does; an empty or
// blank string is the empty list. Empty elements are kept so that
// validators can refuse them.
func parseList(raw string) []string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// parseEnumList parses a list whose every element must be one of allowed,
// without duplicates.
func parseEnumList(key, raw string, allowed []string) ([]string, error) {
	list := parseList(raw)
	for i, v := range list {
		if !slices.Contains(allowed, v) {
			return nil, invalid(key, raw, "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		if slices.Contains(list[:i], v) {
			return nil, invalid(key, raw, "%q is listed twice", v)
		}
	}
	return list, nil
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

func formatDouble(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
