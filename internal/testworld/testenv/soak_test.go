package testenv

import (
	"fmt"
	"strings"
	"testing"
)

type logT struct {
	testing.TB
	logs []string
}

func (l *logT) Helper() {}
func (l *logT) Logf(format string, args ...any) {
	l.logs = append(l.logs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func TestShareAndSeedFollowGRANTWIRE_SOAK(t *testing.T) {
	t.Setenv(SoakEnv, "")
	if Soak() {
		t.Fatal("Soak with GRANTWIRE_SOAK unset")
	}
	for _, c := range [][3]int{{10000, 10, 1000}, {2500, 10, 250}, {5, 10, 1}, {7, 1, 7}, {7, 0, 7}} {
		if got := Share(c[0], c[1]); got != c[2] {
			t.Errorf("Share(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
	l := &logT{TB: t}
	if s := Seed(l, 42, "go test ./x -run TestX -args -seed=%d"); s != 42 {
		t.Fatalf("Seed = %d without soak, want the fixed 42", s)
	}
	if want := "seed 42 (fixed; GRANTWIRE_SOAK=1 draws a fresh one); reproduce with: go test ./x -run TestX -args -seed=42"; l.logs[0] != want {
		t.Fatalf("logged %q, want %q", l.logs[0], want)
	}

	t.Setenv(SoakEnv, "1")
	if !Soak() || Share(10000, 10) != 10000 {
		t.Fatal("GRANTWIRE_SOAK=1 runs the whole set")
	}
	a, b := Seed(l, 42, "go test ./x -args -seed=%d"), Seed(l, 42, "go test ./x -args -seed=%d")
	if a == b {
		t.Fatalf("two soak seeds are both %d: they are drawn fresh", a)
	}
	if want := fmt.Sprintf("seed %d (fresh: GRANTWIRE_SOAK=1); reproduce with: GRANTWIRE_SOAK=1 go test ./x -args -seed=%d", a, a); l.logs[1] != want {
		t.Fatalf("logged %q, want %q", l.logs[1], want)
	}
}
