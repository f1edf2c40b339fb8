package grantwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/mcp"
)

func Example_launch() {
	ctx := context.Background()
	c, _ := example()
	_, err := mcp.Of(c).Launch(ctx, "mcp-github", "builtin:chat")
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		fmt.Println(ge.Code, "fix:", ge.Fix)
	}
	_, err = c.Activate(ctx, "mcp-github", "builtin:chat", []string{"use"})
	must(err)
	_, err = mcp.Of(c).Launch(ctx, "mcp-github", "builtin:chat")
	if errors.As(err, &ge) {
		fmt.Println(ge.Code, "fix:", ge.Fix)
	}
	_, err = c.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}})
	must(err)
	l, err := mcp.Of(c).Launch(ctx, "mcp-github", "builtin:chat")
	must(err)
	fmt.Println(l.Command, l.Args, l.EnvKeys)
	// Environ hands the values to exec.Cmd.Env; they are nowhere else.
	fmt.Println(l.Environ([]string{"PATH=/usr/bin"})[1] == "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_example")
	// Output:
	// AGENT_NOT_GRANTED fix: grantwire activations activate mcp-github builtin:chat --scopes use
	// NOT_CONNECTED fix: grantwire configure mcp-github --from-stdin
	// npx [-y @modelcontextprotocol/server-github] [GITHUB_PERSONAL_ACCESS_TOKEN]
	// true
}

func Example_checkLaunch() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
	must(err)
	r, err := mcp.Of(c).CheckLaunch(ctx, "mcp-github", "builtin:chat")
	must(err)
	fmt.Println(r.Type, r.Ready, r.Refusal.Code, r.Refusal.Fix)
	// Output:
	// mcp_server false AGENT_NOT_ACTIVE grantwire activations activate mcp-github builtin:chat
}

func Example_tools() {
	ctx := context.Background()
	c, _ := example()
	// Activate mcp-github for the chat agent with two of its tools only.
	a, err := mcp.Of(c).Tools().Allow(ctx, "mcp-github", "builtin:chat", []string{"search_code", "get_file_contents"}, []string{"use"})
	must(err)
	fmt.Println(a.Tools)
	// What a relay asks: which tools of the server's list the agent sees, in its order...
	v, err := mcp.Of(c).Tools().Filter(ctx, "mcp-github", "builtin:chat", []string{"create_issue", "search_code", "get_file_contents"})
	must(err)
	fmt.Println(v.Rule, v.Names, v.Refused)
	// ...and, before each call, whether it may call that tool.
	_, err = mcp.Of(c).Tools().Check(ctx, "mcp-github", "builtin:chat", "create_issue")
	var ge *grantwire.Error
	if errors.As(err, &ge) && errors.Is(err, grantwire.ErrToolNotAllowed) {
		fmt.Println(ge.Code, "fix:", ge.Fix)
	}
	rules, err := mcp.Of(c).Tools().Rules(ctx, "mcp-github")
	must(err)
	fmt.Println(rules)
	// Every tool again.
	_, err = mcp.Of(c).Tools().AllowAll(ctx, "mcp-github", "builtin:chat", nil)
	must(err)
	_, err = mcp.Of(c).Tools().Check(ctx, "mcp-github", "builtin:chat", "create_issue")
	fmt.Println(err == nil)
	// Output:
	// [get_file_contents search_code]
	// listed [search_code get_file_contents] [create_issue]
	// TOOL_NOT_ALLOWED fix: grantwire activations activate mcp-github builtin:chat --tools create_issue,get_file_contents,search_code
	// map[mcp-github:map[builtin:chat:[get_file_contents search_code]]]
	// true
}

// Environ replaces a variable of the same name and keeps the rest; String and GoString
// name the keys, never a value.
func TestMCPLaunchEnvironAndPrinting(t *testing.T) {
	l := &mcp.Launch{Connector: "mcp-x", Agent: "builtin:chat", Type: "mcp_server", Command: "srv",
		Args: []string{"--stdio"}, EnvKeys: []string{"A_KEY", "B_KEY"}, Env: map[string]string{"B_KEY": "sk-b-secret", "A_KEY": "sk-a-secret"}}
	require.Equal(t, []string{"PATH=/bin", "HOME=/h", "A_KEY=sk-a-secret", "B_KEY=sk-b-secret"},
		l.Environ([]string{"PATH=/bin", "A_KEY=old", "HOME=/h", "B_KEY="}))
	for _, s := range []string{fmt.Sprint(l), fmt.Sprint(*l), fmt.Sprintf("%v %+v %#v %s %+v %#v", l, l, l, l, *l, *l)} {
		require.NotContains(t, s, "sk-")
		require.True(t, strings.Contains(s, "A_KEY, B_KEY"), s)
	}
	r := &mcp.Launch{Connector: "mcp-r", Agent: "builtin:chat", Type: "mcp_remote", URL: "https://r.example/mcp"}
	require.Equal(t, "mcp_remote mcp-r for builtin:chat at https://r.example/mcp", r.String())
}
