// Package cache: run with gotestsum --rerun-fails; in the current side TestWarm fails on its
// first try and passes on the rerun (a marker file in the package folder), TestSize regresses.
package cache

import (
	"os"
	"testing"
)

func TestWarm(t *testing.T) {
	_, err := os.Stat("warm.marker")
	if werr := os.WriteFile("warm.marker", nil, 0o644); werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal("cache is cold on the first try")
	}
}

func TestSize(t *testing.T) {
	if got := len("abcd"); got != 3 {
		t.Fatalf("size %d", got)
	}
}

func TestName(t *testing.T) {
	if "cache" != "cache" {
		t.Fatal("name")
	}
}
