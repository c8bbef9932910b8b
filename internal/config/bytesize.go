package config

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes. In the file it is an integer or a string
// such as "1024", "16MiB", "64M" or "1GiB". Units follow MySQL's option files:
// K, M, G and T are powers of 1024, and so are KB, MB, GB, TB and the IEC
// spellings KiB, MiB, GiB, TiB; case does not matter.
type ByteSize uint64

// Byte size units.
const (
	B   ByteSize = 1
	KiB          = 1024 * B
	MiB          = 1024 * KiB
	GiB          = 1024 * MiB
	TiB          = 1024 * GiB
)

// ErrByteSize is returned (wrapped) for a string that is not a byte size.
var ErrByteSize = errors.New("not a byte size (want e.g. 1024, 16MiB, 64M, 1GiB)")

// unitSize maps a lower-case unit suffix to its size.
func unitSize(unit string) (ByteSize, bool) {
	switch unit {
	case "", "b":
		return B, true
	case "k", "kb", "kib":
		return KiB, true
	case "m", "mb", "mib":
		return MiB, true
	case "g", "gb", "gib":
		return GiB, true
	case "t", "tb", "tib":
		return TiB, true
	}
	return 0, false
}

// ParseByteSize parses an integer with an optional unit, e.g. "64MiB".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is %w", s, ErrByteSize)
	}
	n, err := strconv.ParseUint(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is %w", s, ErrByteSize)
	}
	unit, ok := unitSize(strings.ToLower(strings.TrimSpace(t[i:])))
	if !ok {
		return 0, fmt.Errorf("%q is %w", s, ErrByteSize)
	}
	hi, lo := bits.Mul64(n, uint64(unit))
	if hi != 0 {
		return 0, fmt.Errorf("%q is too large: %w", s, ErrByteSize)
	}
	return ByteSize(lo), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseByteSize.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText implements encoding.TextMarshaler with String, so a ByteSize
// written out reads back unchanged.
func (b ByteSize) MarshalText() ([]byte, error) {
	return []byte(b.String()), nil
}

// String formats b with the largest IEC unit that divides it exactly, e.g.
// "64MiB"; sizes that are not a whole KiB are plain digits.
func (b ByteSize) String() string {
	for _, u := range []struct {
		size ByteSize
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if b != 0 && b%u.size == 0 {
			return strconv.FormatUint(uint64(b/u.size), 10) + u.name
		}
	}
	return strconv.FormatUint(uint64(b), 10)
}
