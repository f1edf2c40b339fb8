package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// killDoc is the n-th state the writer produces: large enough that writing it takes
// several system calls, and self-checking (pad is derived from n).
type killDoc struct {
	N   int    `json:"n"`
	Pad string `json:"pad"`
}

func killState(n int) []byte {
	b, err := json.Marshal(killDoc{N: n, Pad: strings.Repeat(fmt.Sprintf("%08d", n), 8192)})
	if err != nil {
		panic(err)
	}
	return b
}

const stateFile = "connectors/state.json"

// childLedgerWriter rewrites the state ledger with n+1, n+2, ... until it is killed.
func childLedgerWriter() error {
	ctx := context.Background()
	sh, err := native.New(native.Options{Home: os.Getenv("GW_HOME"), NoWatch: true})
	if err != nil {
		return err
	}
	l := sh.Capabilities().Files
	fmt.Println("ready")
	for {
		err := l.Update(ctx, stateFile, func(doc []byte, _ string) ([]byte, error) {
			n := 0
			if doc != nil {
				var d killDoc
				if err := json.Unmarshal(doc, &d); err != nil {
					return nil, fmt.Errorf("corrupt: %w", err)
				}
				n = d.N
			}
			return killState(n + 1), nil
		})
		if err != nil {
			return err
		}
	}
}

// A writer killed with SIGKILL at random points of its ledger writes, 1000 times: the
// ledger is always valid JSON holding a whole state, never older than the last one seen;
// the next write removes what the killed writer left behind.
func TestMultiProcessKilledWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process stress test; runs without -short")
	}
	const kills = 1000
	home := t.TempDir()
	dir := filepath.Join(home, "connectors")
	p := filepath.Join(dir, "state.json")
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Now()
	last, midWrite := 0, 0
	for i := range kills {
		cmd := child(t, "ledger-writer", "GW_HOME="+home)
		require.Equal(t, "ready", testenv.FirstLine(t, cmd))
		time.Sleep(time.Duration(rng.IntN(12_000)) * time.Microsecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err := cmd.Wait()
		require.Error(t, err, "the writer was killed, it never stops on its own")

		doc, err := os.ReadFile(p)
		if os.IsNotExist(err) && last == 0 {
			continue // killed before its first rename
		}
		require.NoError(t, err, "kill %d", i)
		var d killDoc
		require.NoError(t, json.Unmarshal(doc, &d), "kill %d: the ledger is valid JSON", i)
		require.Equal(t, string(killState(d.N)), string(doc), "kill %d: a whole state", i)
		require.GreaterOrEqual(t, d.N, last, "kill %d: never older than what was already seen", i)
		last = d.N
		require.Equal(t, os.FileMode(0o600), mode(t, p))
		temps, _ := filepath.Glob(filepath.Join(dir, ".state.json.tmp-*"))
		require.LessOrEqual(t, len(temps), 1, "kill %d: at most the killed writer's temporary file", i)
		if len(temps) == 1 {
			midWrite++
		}
	}
	elapsed := time.Since(start)

	// The next writer takes the lock the dead one held and cleans up after it.
	sh, err := native.New(native.Options{Home: home, NoWatch: true})
	require.NoError(t, err)
	defer sh.Close()
	l := sh.Capabilities().Files
	require.NoError(t, l.Update(context.Background(), stateFile, func([]byte, string) ([]byte, error) { return killState(last + 1), nil }))
	temps, _ := filepath.Glob(filepath.Join(dir, ".state.json.tmp-*"))
	require.Empty(t, temps)
	require.Greater(t, midWrite, kills/10, "enough kills landed inside a write (a temporary file was left)")
	t.Logf("%d kills in %s: %d states written, %d kills landed mid-write (temporary file left behind)",
		kills, elapsed.Round(time.Millisecond), last, midWrite)
}
