// Two MCP hosts on one memor serve, through the TypeScript SDK's streamable
// HTTP client (what Cursor and mcp-remote use). Connects both at once, lists
// the tools, lets each add a memory concurrently, then has each query what
// the other added. Prints one JSON report on stdout for cli's
// TestMCPHTTPTypeScript to check; exits 1 on any protocol error.
//
// Environment: MEMOR_MCP_URL (http://127.0.0.1:PORT/mcp), MEMOR_TOKEN
// (optional bearer token).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.MEMOR_MCP_URL);
const token = process.env.MEMOR_TOKEN || "";
const headers = token ? { Authorization: `Bearer ${token}` } : {};

async function connect(name) {
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const [a, b] = await Promise.all([connect("host-a"), connect("host-b")]);
const tools = await Promise.all([a, b].map(async (c) => (await c.listTools()).tools.map((t) => t.name).sort()));
const added = await Promise.all([
  a.callTool({ name: "add_memory", arguments: { user_id: "me", text: "I live in Lisbon.", at: "2026-03-01" } }),
  b.callTool({ name: "add_memory", arguments: { user_id: "me", text: "I work at Globex.", at: "2026-03-01" } }),
]);
const [aAsks, bAsks] = await Promise.all([
  a.callTool({ name: "query_memory", arguments: { user_id: "me", text: "Where do I work?" } }),
  b.callTool({ name: "query_memory", arguments: { user_id: "me", text: "Where do I live?" } }),
]);
// A tool error (bad argument) is a result, not a protocol failure.
const bad = await a.callTool({ name: "query_memory", arguments: { user_id: "me", text: "" } });
console.log(JSON.stringify({
  tools,
  added: added.map((r) => ({ error: !!r.isError, seq: r.structuredContent?.seq, learned: (r.structuredContent?.learned || []).map((f) => f.object) })),
  a_asks_work: { error: !!aAsks.isError, first: aAsks.structuredContent?.results?.[0]?.text ?? "", text: text(aAsks) },
  b_asks_home: { error: !!bAsks.isError, first: bAsks.structuredContent?.results?.[0]?.text ?? "", text: text(bAsks) },
  bad_argument: { error: !!bad.isError, text: text(bad) },
}));
await Promise.all([a.close(), b.close()]);
