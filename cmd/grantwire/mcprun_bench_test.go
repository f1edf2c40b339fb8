package main_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// BenchmarkBinaryMCPRun is what going through `grantwire mcp run` costs an MCP client per
// server start: one op is a Go SDK client starting the server over stdio, the initialize
// handshake, one tool call and the shutdown (stdin closed, the server exits).
//
//	direct: the test server (internal/cmd/mcp-keyprobe) started with its key in the
//	        environment, as a client configuration holding the secret would
//	mcp-run: `grantwire mcp run mcp-probe --agent builtin:chat` on the real Secret Service:
//	        the launch gate, the keyring read, then the same server
//
// rss-MB is grantwire's resident memory while the server runs (mcp-run only), read from
// /proc after the tool call.
//
//	scripts/with-keyring.sh go test ./cmd/grantwire -run '^$' -bench BinaryMCPRun -benchtime 20x -count 3
func BenchmarkBinaryMCPRun(b *testing.B) {
	testenv.RequireKeyring(b, "./cmd/grantwire")
	bin, probe := grantwireBinary(b), probeBinary(b)
	home := b.TempDir()
	service := "grantwire.bench." + testenv.RandHex(4)
	defer func() { _ = gokeyring.DeleteAll(service) }()
	key := "sk-bench-" + testenv.RandHex(16)
	sum := sha256.Sum256([]byte(key))
	probeArgs := []string{"--key-env", "PROBE_API_KEY", "--want-sha256", hex.EncodeToString(sum[:])}

	var doc map[string]map[string]any
	if err := json.Unmarshal(catalog.Default().JSON(), &doc); err != nil {
		b.Fatal(err)
	}
	doc["connectors"]["mcp-probe"] = map[string]any{
		"type": "mcp_server", "display_name": "Key probe", "tier": "test", "command": probe, "args": probeArgs,
		"env": []map[string]any{{"key": "PROBE_API_KEY", "required": true, "secret": true, "description": "the key"}},
	}
	raw, _ := json.Marshal(doc)
	catFile := filepath.Join(home, "catalog.json")
	if err := os.WriteFile(catFile, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GRANTWIRE_HOME=" + filepath.Join(home, ".grantwire"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "GRANTWIRE_KEYRING_SERVICE=" + service, "GRANTWIRE_CATALOG=" + catFile,
		"DBUS_SESSION_BUS_ADDRESS=" + os.Getenv("DBUS_SESSION_BUS_ADDRESS"), "XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR")}
	for _, c := range []struct{ stdin, args string }{
		{"", "activations activate mcp-probe builtin:chat --scopes use"},
		{"PROBE_API_KEY=" + key + "\n", "configure mcp-probe --from-stdin"},
	} {
		cmd := exec.Command(bin, strings.Fields(c.args)...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(c.stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", c.args, err, out)
		}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	session := func(b *testing.B, cmd *exec.Cmd, rss *float64) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "key_status"})
		if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "matches:true") {
			b.Fatalf("key_status: %v %v", err, res)
		}
		if rss != nil {
			*rss += vmRSSMB(cmd.Process.Pid)
		}
		if err := cs.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(probe, probeArgs...)
			cmd.Env = append(append([]string{}, env...), "PROBE_API_KEY="+key)
			session(b, cmd, nil)
		}
	})
	b.Run("mcp-run", func(b *testing.B) {
		var rss float64
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(bin, "mcp", "run", "mcp-probe", "--agent", "builtin:chat")
			cmd.Env = env
			session(b, cmd, &rss)
		}
		b.ReportMetric(rss/float64(b.N), "rss-MB")
	})
}

// vmRSSMB is a process's resident set size in MB (Linux), 0 when unknown.
func vmRSSMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			_, _ = fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}
