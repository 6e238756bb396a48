// Package price is the code under test.
package price

import "strings"

// Cents parses "1.25" into 125.
func Cents(text string) int {
	whole, frac, _ := strings.Cut(text, ".")
	n := 0
	for _, r := range whole + (frac + "00")[:2] {
		n = n*10 + int(r-'0')
	}
	return n
}
