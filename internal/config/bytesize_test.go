package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/internal/config"
)

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want config.ByteSize
	}{
		{"0", 0},
		{"1024", 1024},
		{"16MiB", 16 << 20},
		{"64M", 64 << 20},
		{"64m", 64 << 20},
		{"64MB", 64 << 20},
		{"1GiB", 1 << 30},
		{"1G", 1 << 30},
		{"4k", 4096},
		{"4KiB", 4096},
		{"2TiB", 2 << 40},
		{"512B", 512},
		{" 16 MiB ", 16 << 20},
		{"16777216", 16 << 20},
	}
	for _, tt := range tests {
		got, err := config.ParseByteSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
		var b config.ByteSize
		if err := b.UnmarshalText([]byte(tt.in)); err != nil || b != tt.want {
			t.Errorf("UnmarshalText(%q) = %d, %v; want %d", tt.in, b, err, tt.want)
		}
	}
}

func TestParseByteSizeRejectsJunk(t *testing.T) {
	for _, in := range []string{"", "abc", "MiB", "-1", "1.5GiB", "16 XB", "16MiBs", "0x10", "99999999999999999999", "17179869184GiB"} {
		got, err := config.ParseByteSize(in)
		if !errors.Is(err, config.ErrByteSize) {
			t.Errorf("ParseByteSize(%q) = %d, %v; want ErrByteSize", in, got, err)
			continue
		}
		if !strings.Contains(err.Error(), "e.g. 1024, 16MiB") {
			t.Errorf("ParseByteSize(%q): message %q does not show the accepted forms", in, err)
		}
		b := config.ByteSize(7)
		if err := b.UnmarshalText([]byte(in)); err == nil || b != 7 {
			t.Errorf("UnmarshalText(%q) changed the value to %d or accepted it (err %v)", in, b, err)
		}
	}
}

func TestByteSizeStringRoundTrips(t *testing.T) {
	tests := []struct {
		in   config.ByteSize
		want string
	}{
		{0, "0"},
		{1023, "1023"},
		{1024, "1KiB"},
		{1536, "1536"},
		{3 * config.KiB / 2 * 2, "3KiB"},
		{64 * config.MiB, "64MiB"},
		{config.GiB, "1GiB"},
		{5 * config.TiB, "5TiB"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%d.String() = %q, want %q", uint64(tt.in), got, tt.want)
		}
		text, _ := tt.in.MarshalText()
		back, err := config.ParseByteSize(string(text))
		if err != nil || back != tt.in {
			t.Errorf("round trip of %d via %q = %d, %v", uint64(tt.in), text, back, err)
		}
	}
}
