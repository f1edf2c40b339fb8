// Command mcp-conformance-proxy-client is the client the official MCP conformance suite
// (@modelcontextprotocol/conformance) tests through `grantwire mcp proxy`:
// scripts/mcp-conformance.sh runs the suite's client scenarios that apply to a client
// transport with it (the second list, "client scenarios passed through mcp proxy").
//
// It is an MCP Go SDK client on the stdio side of a real `grantwire mcp proxy` process:
// in a fresh grantwire home it runs `grantwire mcp add conformance --url <the suite's
// server>` and `grantwire activations activate conformance builtin:chat`, then starts
// `grantwire mcp proxy conformance --agent builtin:chat` and speaks MCP to it over the
// process's stdin and stdout; the proxy is the only HTTP client of the suite's server, so
// every check the suite makes on the wire (headers, request metadata, schemas, SSE resume,
// server→client requests) is a check of the proxy's forwarding.
//
//	mcp-conformance-proxy-client --grantwire <grantwire binary> <server URL>
//
// MCP_CONFORMANCE_SCENARIO names the scenario, MCP_CONFORMANCE_PROTOCOL_VERSION the
// protocol version the suite runs it at (the client asks for it), MCP_CONFORMANCE_CONTEXT
// may carry the tool calls to make ({"toolCalls": [{"name", "arguments"}]}). The
// credential store is the machine's (the script runs under scripts/with-keyring.sh); the
// suite's servers ask for no authorization, so no secret is ever stored.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's name in the client's grantwire home and the agent the proxy serves.
const (
	serverID = "conformance"
	agent    = "builtin:chat"
)

// Scenarios are the client scenarios this command plays, by name.
var scenarios = map[string]func(ctx context.Context, s *mcp.ClientSession, c conformanceContext) error{
	"initialize":                          listTools,
	"tools_call":                          callTool("add_numbers", map[string]any{"a": 5, "b": 3}),
	"elicitation-sep1034-client-defaults": callTool("test_client_elicitation_defaults", map[string]any{}),
	"sse-retry":                           callTool("test_reconnection", map[string]any{}),
	"request-metadata":                    func(context.Context, *mcp.ClientSession, conformanceContext) error { return nil },
	"json-schema-ref-no-deref":            listTools,
	"json-schema-2020-12-preservation":    echoSchema,
	"sep-2322-client-request-state":       requestState,
	"http-standard-headers":               everyVerb,
	"http-custom-headers":                 contextCalls,
	"http-invalid-tool-headers":           callListed,
}

type conformanceContext struct {
	ToolCalls []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"toolCalls"`
}

func main() {
	args := os.Args[1:]
	bin := ""
	if len(args) >= 2 && args[0] == "--grantwire" {
		bin, args = args[1], args[2:]
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if bin == "" || len(args) != 1 || scenario == "" {
		fmt.Fprintln(os.Stderr, "usage: mcp-conformance-proxy-client --grantwire <grantwire binary> <server URL>  (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION, MCP_CONFORMANCE_CONTEXT)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := run(ctx, bin, args[0], scenario); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-conformance-proxy-client (%s): %v\n", scenario, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin, serverURL, scenario string) error {
	play, ok := scenarios[scenario]
	if !ok {
		return fmt.Errorf("no such client scenario here; these are played: %s", strings.Join(names(), ", "))
	}
	var cc conformanceContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &cc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	home, err := os.MkdirTemp("", "grantwire-mcp-conformance-proxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	env := append(os.Environ(), "GRANTWIRE_HOME="+home, "GRANTWIRE_KEYRING_SERVICE="+filepath.Base(home))
	gw := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env, cmd.Dir = env, home
		return cmd
	}
	for _, args := range [][]string{
		{"mcp", "add", serverID, "--url", serverURL},
		{"activations", "activate", serverID, agent, "--scopes", "use"},
	} {
		if out, err := gw(args...).CombinedOutput(); err != nil {
			return fmt.Errorf("grantwire %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	proxy := gw("mcp", "proxy", serverID, "--agent", agent)
	stderr := &strings.Builder{}
	proxy.Stderr = stderr
	defer func() {
		if stderr.Len() > 0 {
			fmt.Fprintf(os.Stderr, "grantwire mcp proxy's stderr:\n%s", stderr)
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "grantwire-conformance-proxy-client", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		// Every elicitation is accepted: with the requested schema's defaults left to
		// the server (elicitation-sep1034-client-defaults) and a confirmation where one is
		// asked (sep-2322-client-request-state).
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			content := map[string]any{}
			if strings.Contains(fmt.Sprint(r.Params.RequestedSchema), "confirmed") {
				content["confirmed"] = true
			}
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
	})
	var opts *mcp.ClientSessionOptions
	if v := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"); v != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: proxy, TerminateDuration: 5 * time.Second}, opts)
	if err != nil {
		return fmt.Errorf("connecting through grantwire mcp proxy: %w", err)
	}
	err = play(ctx, session, cc)
	return errors.Join(err, session.Close())
}

func names() []string {
	var list []string
	for n := range scenarios {
		list = append(list, n)
	}
	slices.Sort(list)
	return list
}

func listTools(ctx context.Context, s *mcp.ClientSession, _ conformanceContext) error {
	_, err := s.ListTools(ctx, nil)
	return err
}

// callTool lists the tools and calls the named one.
func callTool(name string, args map[string]any) func(context.Context, *mcp.ClientSession, conformanceContext) error {
	return func(ctx context.Context, s *mcp.ClientSession, _ conformanceContext) error {
		tools, err := s.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			return fmt.Errorf("the server lists no tool %q", name)
		}
		_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		return err
	}
}

// echoSchema sends the focal tool's input schema, as the proxy delivered it, back to the
// server's echo tool, which compares it with the schema it listed.
func echoSchema(ctx context.Context, s *mcp.ClientSession, _ conformanceContext) error {
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
	if i < 0 {
		return errors.New("the server lists no tool json_schema_2020_12_tool")
	}
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "json_schema_echo", Arguments: map[string]any{"schema": tools.Tools[i].InputSchema}})
	return err
}

// requestState calls the scenario's tools; the SDK answers an input-required result's
// requests (the elicitation) and retries with the server's request state. Some calls
// are refused on purpose; the suite judges what reached the server.
func requestState(ctx context.Context, s *mcp.ClientSession, _ conformanceContext) error {
	for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil {
			fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", name, err)
		}
	}
	return nil
}

// everyVerb lists and uses tools, resources and prompts once each.
func everyVerb(ctx context.Context, s *mcp.ClientSession, _ conformanceContext) error {
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	if len(tools.Tools) > 0 {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{}}); err != nil {
			return err
		}
	}
	res, err := s.ListResources(ctx, nil)
	if err != nil {
		return err
	}
	if len(res.Resources) > 0 {
		if _, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI}); err != nil {
			return err
		}
	}
	prompts, err := s.ListPrompts(ctx, nil)
	if err != nil {
		return err
	}
	if len(prompts.Prompts) > 0 {
		if _, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompts.Prompts[0].Name, Arguments: map[string]string{}}); err != nil {
			return err
		}
	}
	return nil
}

// contextCalls lists the tools, then makes the tool calls the suite names.
func contextCalls(ctx context.Context, s *mcp.ClientSession, c conformanceContext) error {
	if _, err := s.ListTools(ctx, nil); err != nil {
		return err
	}
	if len(c.ToolCalls) == 0 {
		return errors.New("MCP_CONFORMANCE_CONTEXT names no toolCalls")
	}
	for _, call := range c.ToolCalls {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: call.Name, Arguments: call.Arguments}); err != nil {
			return fmt.Errorf("tools/call %s: %w", call.Name, err)
		}
	}
	return nil
}

// callListed calls every tool the client was given (a tool with an invalid x-mcp-header
// annotation must not be among them).
func callListed(ctx context.Context, s *mcp.ClientSession, _ conformanceContext) error {
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range tools.Tools {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: t.Name, Arguments: map[string]any{"region": "us-west1"}}); err != nil {
			fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", t.Name, err)
		}
	}
	return nil
}
