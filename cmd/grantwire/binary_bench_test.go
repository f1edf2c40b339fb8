package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkBinaryGrantsList is `grants list` as the user feels it: the built binary,
// started as a process on an empty home, until it exits (engine start, OS shell, one
// operation, output). ns/op is the wall time of one command.
//
//	warm-cache: the compiled policy is in the user's cache directory (every run after the first)
//	floor-version: `grantwire --version`, the process alone (no engine, no OS shell)
//	cold-cache: an empty cache directory each time (the first run: compile, then store)
//
// GRANTWIRE_BENCH_BINARY runs another binary instead (an older build, for comparison).
//
//	go test ./cmd/grantwire -run '^$' -bench BinaryGrantsList -count 10 | go tool benchstat -
func BenchmarkBinaryGrantsList(b *testing.B) {
	bin := os.Getenv("GRANTWIRE_BENCH_BINARY")
	if bin == "" {
		bin = grantwireBinary(&testing.T{})
		if binDefault.err != nil {
			b.Fatal(binDefault.err)
		}
	}
	home := b.TempDir()
	args := []string{"grants", "list"}
	var cpu time.Duration // the process's user + system CPU time, less sensitive to load than wall time
	run := func(b *testing.B, cache string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GRANTWIRE_HOME=" + filepath.Join(home, ".grantwire"), "XDG_CACHE_HOME=" + cache}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.Run("warm-cache", func(b *testing.B) {
		cache := filepath.Join(home, "cache")
		run(b, cache)
		cpu = 0
		b.ReportAllocs()
		for b.Loop() {
			run(b, cache)
		}
		report(b)
	})
	// The floor: the same process printing its version, with no engine to start.
	b.Run("floor-version", func(b *testing.B) {
		args = []string{"--version"}
		defer func() { args = []string{"grants", "list"} }()
		cpu = 0
		b.ReportAllocs()
		for b.Loop() {
			run(b, filepath.Join(home, "cache"))
		}
		report(b)
	})
	b.Run("cold-cache", func(b *testing.B) {
		cpu = 0
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			b.StopTimer()
			cache := filepath.Join(home, "cold", strconv.Itoa(i))
			b.StartTimer()
			run(b, cache)
		}
		report(b)
	})
}
