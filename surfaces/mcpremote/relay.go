package mcpremote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/mcp"
)

// CodeToolRefused is the JSON-RPC error code of a tools/call the agent may not make (a
// server-defined code of JSON-RPC 2.0's -32000 to -32099 range). Its message is the
// policy's refusal with the command that allows the call; its data holds the error code
// and the fix.
const CodeToolRefused = -32001

// ToolGate applies an agent's tool rule for one MCP server (docs/behaviour.md#tools): it
// filters the tools/list answers and refuses the tools/call requests the policy's mcp_tool
// decision does not allow. Each tools/call is one decision (a record in the decision log).
type ToolGate struct {
	Client        *grantwire.Client
	Server, Agent string
}

// toolRules is what the relay needs of a ToolGate (the fuzz test gives it another).
type toolRules interface {
	// allow is nil when agent may call tool, else the policy's refusal.
	allow(ctx context.Context, tool string) error
	// visible says which of names the agent may see, and whether a rule lists them
	// ("listed") or there is none ("all").
	visible(ctx context.Context, names []string) (map[string]bool, bool, error)
}

func (g *ToolGate) allow(ctx context.Context, tool string) error {
	_, err := mcp.Of(g.Client).Tools().Check(ctx, g.Server, g.Agent, tool)
	return err
}

func (g *ToolGate) visible(ctx context.Context, names []string) (map[string]bool, bool, error) {
	v, err := mcp.Of(g.Client).Tools().Filter(ctx, g.Server, g.Agent, names)
	if err != nil {
		return nil, false, err
	}
	out := make(map[string]bool, len(v.Names))
	for _, n := range v.Names {
		out[n] = true
	}
	return out, v.Rule == "listed", nil
}

// sendable says whether a tool name can be given to the policy: the policy refuses any
// argument with a double quote, a backslash or a control character (USAGE for the whole
// query), so such a name from a server is judged without being sent.
func sendable(name string) bool {
	for _, r := range name {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// placeholder stands in for a name that cannot be sent: the policy then words the refusal
// (its fix allows every tool, as no rule can list such a name).
func placeholder(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, name)
}

// refusal is the JSON-RPC error a refused tools/call gets.
func refusal(err error) *jsonrpc.Error {
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		data, _ := json.Marshal(map[string]string{"code": ge.Code, "fix": ge.Fix})
		return &jsonrpc.Error{Code: CodeToolRefused, Message: "grantwire: " + ge.Code + ": " + ge.Message, Data: data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "grantwire: the tool call could not be decided: " + err.Error()}
}

// checkCall decides on a tools/call request's params: nil forwards it; else the JSON-RPC
// error to answer it with, and the refusal it says.
func checkCall(ctx context.Context, g toolRules, params json.RawMessage) (*jsonrpc.Error, error) {
	var p struct {
		Name *string `json:"name"`
	}
	if json.Unmarshal(params, &p) != nil || p.Name == nil {
		// No tool name: the server answers the malformed call itself (invalid params).
		return nil, nil
	}
	name := *p.Name
	if !sendable(name) {
		name = placeholder(name)
	}
	if err := g.allow(ctx, name); err != nil {
		return refusal(err), err
	}
	return nil, nil
}

// filterList keeps, in a tools/list result, the tools the agent may see (every other
// member of the result as the server sent it). A result that is not an object with a
// tools array is passed on as it is: it lists no tool a client could call. Under a rule,
// a tool without a name the policy can judge is left out.
func filterList(ctx context.Context, g toolRules, result json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return result, nil
	}
	var tools []json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return result, nil
	}
	names := make([]string, len(tools))
	ok := make([]bool, len(tools))
	var ask []string
	for i, t := range tools {
		var tool struct {
			Name *string `json:"name"`
		}
		if json.Unmarshal(t, &tool) == nil && tool.Name != nil && sendable(*tool.Name) {
			names[i], ok[i] = *tool.Name, true
			ask = append(ask, *tool.Name)
		}
	}
	allowed, listed, err := g.visible(ctx, ask)
	if err != nil {
		return nil, refusal(err)
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		if (ok[i] && allowed[names[i]]) || (!ok[i] && !listed) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(tools) {
		return result, nil
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, refusal(err)
	}
	res["tools"] = raw
	out, err := json.Marshal(res)
	if err != nil {
		return nil, refusal(err)
	}
	return out, nil
}

// frame is one JSON-RPC message of a line, with only what the relay judges decoded.
type frame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// idKey is a message id as a map key (its JSON, without surrounding space); "" when the
// message has none (a notification) or a null one.
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || string(id) == "null" {
		return ""
	}
	return string(id)
}

// parseLine decodes one line of a stdio MCP stream: a JSON-RPC message, or a batch (an
// array of them). ok is false for anything else (not JSON, a scalar, an array holding
// something that is not an object), which the relay passes on unchanged.
func parseLine(line []byte) (msgs []frame, batch, ok bool) {
	b := bytes.TrimSpace(line)
	if len(b) == 0 {
		return nil, false, false
	}
	switch b[0] {
	case '{':
		var f frame
		if json.Unmarshal(b, &f) != nil {
			return nil, false, false
		}
		return []frame{f}, false, true
	case '[':
		var raws []json.RawMessage
		if json.Unmarshal(b, &raws) != nil || len(raws) == 0 {
			return nil, false, false
		}
		out := make([]frame, len(raws))
		for i, r := range raws {
			r = bytes.TrimSpace(r)
			if len(r) == 0 || r[0] != '{' || json.Unmarshal(r, &out[i]) != nil {
				return nil, false, false
			}
		}
		return out, true, true
	}
	return nil, false, false
}

// lineWriter writes whole lines to one stream from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, err := l.w.Write(b)
	return err
}

// relay is the state of one stdio relay: the ids of the client's tools/list requests whose
// answers are still to be filtered.
type relay struct {
	g     toolRules
	mu    sync.Mutex
	lists map[string]bool
}

func newRelay(g toolRules) *relay { return &relay{g: g, lists: map[string]bool{}} }

// fromClient judges one line the client sent: what to forward to the server (nil: nothing)
// and the answers to give the client now (refused calls).
func (r *relay) fromClient(ctx context.Context, line []byte) (forward []byte, answers [][]byte) {
	msgs, batch, ok := parseLine(line)
	if !ok {
		return line, nil
	}
	keep := msgs[:0:0]
	for _, m := range msgs {
		id := idKey(m.ID)
		if m.Method == "tools/call" && id != "" {
			if jerr, _ := checkCall(ctx, r.g, m.Params); jerr != nil {
				resp, _ := json.Marshal(struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   *jsonrpc.Error  `json:"error"`
				}{"2.0", m.ID, jerr})
				answers = append(answers, resp)
				continue
			}
		}
		if m.Method == "tools/list" && id != "" {
			r.mu.Lock()
			r.lists[id] = true
			r.mu.Unlock()
		}
		keep = append(keep, m)
	}
	switch {
	case len(keep) == len(msgs):
		return line, answers // as sent, byte for byte
	case len(keep) == 0:
		return nil, answers
	case !batch:
		return nil, answers
	}
	out, err := json.Marshal(keep)
	if err != nil {
		return line, answers
	}
	return out, answers
}

// fromServer judges one line the server sent: what to give the client.
func (r *relay) fromServer(ctx context.Context, line []byte) []byte {
	msgs, batch, ok := parseLine(line)
	if !ok {
		return line
	}
	changed := false
	for i, m := range msgs {
		id := idKey(m.ID)
		if id == "" || m.Method != "" {
			continue
		}
		r.mu.Lock()
		isList := r.lists[id]
		delete(r.lists, id)
		r.mu.Unlock()
		if !isList || len(m.Result) == 0 {
			continue
		}
		res, jerr := filterList(ctx, r.g, m.Result)
		if jerr != nil {
			e, _ := json.Marshal(jerr)
			msgs[i].Result, msgs[i].Error = nil, e
			changed = true
			continue
		}
		if !bytes.Equal(res, m.Result) {
			msgs[i].Result = res
			changed = true
		}
	}
	if !changed {
		return line
	}
	var out []byte
	var err error
	if batch {
		out, err = json.Marshal(msgs)
	} else {
		out, err = json.Marshal(msgs[0])
	}
	if err != nil {
		return line
	}
	return out
}

// maxLine bounds one line of the relay (a message of the stdio transport); a longer one is
// an error rather than memory without end.
const maxLine = 64 << 20

// RelayStdio relays a stdio MCP conversation between a client (clientIn, clientOut) and a
// server (serverIn, serverOut), one newline-delimited JSON-RPC message (or batch) per line,
// applying the gate: tools/list answers are filtered, and a refused tools/call is answered
// with the refusal and never reaches the server. Every other line is passed on byte for
// byte, a line that is not JSON-RPC included (the other side answers it as it would). The
// end of the client's input closes serverIn; RelayStdio returns when the server's output
// ends (the client's input may stay open: the server is gone).
func RelayStdio(ctx context.Context, g *ToolGate, clientIn io.Reader, clientOut io.Writer, serverIn io.WriteCloser, serverOut io.Reader) error {
	return relayStdio(ctx, g, clientIn, clientOut, serverIn, serverOut)
}

func relayStdio(ctx context.Context, g toolRules, clientIn io.Reader, clientOut io.Writer, serverIn io.WriteCloser, serverOut io.Reader) error {
	r := newRelay(g)
	toClient := &lineWriter{w: clientOut}
	toServer := &lineWriter{w: serverIn}
	errc := make(chan error, 1)
	go func() { // client -> server
		defer serverIn.Close()
		errc <- eachLine(clientIn, func(line []byte) error {
			fwd, answers := r.fromClient(ctx, line)
			for _, a := range answers {
				if err := toClient.line(a); err != nil {
					return err
				}
			}
			if fwd != nil {
				return toServer.line(fwd)
			}
			return nil
		})
	}()
	// server -> client, until the server's output ends
	err := eachLine(serverOut, func(line []byte) error {
		return toClient.line(r.fromServer(ctx, line))
	})
	if err != nil {
		return err
	}
	select {
	case cerr := <-errc:
		if cerr != nil && !errors.Is(cerr, syscall.EPIPE) && !errors.Is(cerr, os.ErrClosed) {
			return cerr
		}
	default: // the client is still connected; the server is gone
	}
	return nil
}

// errLineTooLong is a line over maxLine.
var errLineTooLong = errors.New("mcpremote: a line of the MCP stdio stream is over 64 MiB")

// eachLine calls fn with every line of rd (its newline kept; the last line may lack one).
func eachLine(rd io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(rd, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return ignoreEOF(err)
		}
	}
}

// lockedWriter makes each Write whole against the others (the SDK writes a message and its
// newline in one Write), so that the relay's own answers never split the SDK's lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// wellFormed is nil when a line of a stdio stream is one JSON-RPC message, a batch of them,
// or blank; else why it is not.
func wellFormed(line []byte) error {
	b := bytes.TrimSpace(line)
	if len(b) == 0 {
		return nil
	}
	if b[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return err
		}
		if len(raws) == 0 {
			return errors.New("an empty batch")
		}
		for _, r := range raws {
			if _, err := jsonrpc.DecodeMessage(r); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := jsonrpc.DecodeMessage(b)
	return err
}

// parseErrorLine is the JSON-RPC answer to a line that is not a message (-32700, id null).
func parseErrorLine(why error) []byte {
	msg := why.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": jsonrpc.CodeParseError, "message": "grantwire: a line that is not a JSON-RPC message was not forwarded: " + msg,
	}})
	return append(b, '\n')
}

// frameFilter reads a client's stdio stream line by line for the proxy: a line that is a
// JSON-RPC message (or batch) is passed on as it is; any other line is answered on out
// with a parse error and reported, and the stream goes on (the SDK's reader would end the
// session on it).
type frameFilter struct {
	in     io.ReadCloser
	br     *bufio.Reader
	out    io.Writer
	report func(error)
	buf    []byte
	err    error
}

func newFrameFilter(in io.ReadCloser, out io.Writer, report func(error)) *frameFilter {
	return &frameFilter{in: in, br: bufio.NewReaderSize(in, 64<<10), out: out, report: report}
}

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 && f.err == nil {
		line, err := readLine(f.br)
		if len(line) > 0 {
			if why := wellFormed(line); why != nil {
				if _, werr := f.out.Write(parseErrorLine(why)); werr != nil {
					return 0, werr
				}
				if f.report != nil {
					f.report(fmt.Errorf("mcp proxy: the client sent a line that is not a JSON-RPC message (answered with a parse error): %w", why))
				}
			} else {
				f.buf = line
			}
		}
		f.err = err
	}
	if len(f.buf) == 0 {
		return 0, f.err
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

func (f *frameFilter) Close() error { return f.in.Close() }

// readLine reads one line (its newline kept) of at most maxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			if len(long) > maxLine {
				return nil, errLineTooLong
			}
			continue
		}
		return append(long, chunk...), err
	}
}
