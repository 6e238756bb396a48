package price

import "testing"

func TestCents(t *testing.T) {
	if got := Cents("1.25"); got != 125 {
		t.Fatalf("Cents(1.25) = %d", got)
	}
}

func TestTrims(t *testing.T) {
	for _, tc := range []struct{ name, in string }{{"leading", " 2.50"}, {"trailing", "2.50 "}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cents(tc.in); got != 250 {
				t.Errorf("Cents(%q) = %d", tc.in, got)
			}
		})
	}
}
