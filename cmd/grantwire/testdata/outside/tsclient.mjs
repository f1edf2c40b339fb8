// tsclient.mjs: the MCP TypeScript SDK's Client, as an MCP host runs it: it spawns a stdio
// server with the SDK's StdioClientTransport (which passes only the environment it is
// given: the SDK's default inherited variables plus spec.env), initializes, lists the
// tools, optionally asks for logging, calls the tools of spec.calls (a JSON-RPC error
// answering a call is recorded as its error) and prints one JSON document on stdout. Used by cmd/grantwire/outside_test.go.
//
//   node tsclient.mjs '{"sdk": "<dir of @modelcontextprotocol/sdk>", "command": "...",
//     "args": [...], "env": {...}, "cwd": "...", "logging": "debug",
//     "calls": [{"name": "greet", "arguments": {"name": "x"}}]}'
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const spec = JSON.parse(process.argv[2]);
const esm = (p) => import(pathToFileURL(join(spec.sdk, 'dist/esm', p)).href);
const { Client } = await esm('client/index.js');
const { StdioClientTransport, getDefaultEnvironment } = await esm('client/stdio.js');
const { LoggingMessageNotificationSchema } = await esm('types.js');

const transport = new StdioClientTransport({
  command: spec.command,
  args: spec.args ?? [],
  env: { ...getDefaultEnvironment(), ...(spec.env ?? {}) },
  cwd: spec.cwd,
  stderr: 'inherit',
});
const client = new Client({ name: 'grantwire-outside-tsclient', version: '1.0.0' });
const out = { logs: [], calls: [] };
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  out.logs.push(String(n.params.data));
});
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  if (spec.logging) {
    await client.setLoggingLevel(spec.logging);
  }
  for (const c of spec.calls ?? []) {
    let res;
    try {
      res = await client.callTool({ name: c.name, arguments: c.arguments ?? {} });
    } catch (err) {
      // A JSON-RPC error answering the call (a refused tool): recorded, not fatal.
      if (typeof err?.code !== 'number') throw err;
      out.calls.push({ isError: true, error: { code: err.code, message: String(err.message) } });
      continue;
    }
    out.calls.push({ isError: !!res.isError, text: (res.content ?? []).filter((x) => x.type === 'text').map((x) => x.text).join('\n') });
  }
  await client.close();
} catch (err) {
  process.stderr.write(`tsclient: ${err?.message ?? err}\n`);
  await client.close().catch(() => {});
  process.exit(1);
}
process.stdout.write(JSON.stringify(out) + '\n');
