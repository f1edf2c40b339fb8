package grantwire_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/mcp"
)

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
