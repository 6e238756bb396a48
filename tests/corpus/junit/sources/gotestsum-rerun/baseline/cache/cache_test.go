// Package cache: run with gotestsum --rerun-fails; in the current side TestWarm fails on its
// first try and passes on the rerun (a marker file in the package folder), TestSize regresses.
package cache

import (
	"os"
	"testing"
)

func TestWarm(t *testing.T) {
	if err := os.WriteFile("warm.marker", nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSize(t *testing.T) {
	if got := len("abc"); got != 3 {
		t.Fatalf("size %d", got)
	}
}

func TestName(t *testing.T) {
	if "cache" != "cache" {
		t.Fatal("name")
	}
}
