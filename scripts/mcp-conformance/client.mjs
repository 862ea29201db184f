// Drives a real skillhost daemon with the official MCP TypeScript SDK: a
// client nobody on the project wrote. Run by scripts/mcp-conformance.sh,
// which builds the host and the skills, starts the daemon and passes:
//
//   node client.mjs URL SKILLS_DIR HOST_BIN TESTSKILL_BIN
//
// URL is the daemon's /mcp endpoint. The client checks the streamable HTTP
// face in depth (initialize, list, calls, errors, a hot swap announced by
// notifications/tools/list_changed), then the two stdio modes of `host mcp`
// (embedded host, bridge to the daemon). Every check prints "ok: ..."; the
// first mismatch prints "FAIL: ..." and exits 1.

import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, skillsDir, hostBin, testskillBin] = process.argv.slice(2);
if (!url || !skillsDir || !hostBin || !testskillBin) {
  console.error('usage: node client.mjs URL SKILLS_DIR HOST_BIN TESTSKILL_BIN');
  process.exit(2);
}

class Mismatch extends Error {}
function check(cond, what, got) {
  if (!cond) {
    throw new Mismatch(`${what}${got === undefined ? '' : `; got ${JSON.stringify(got)}`}`);
  }
}
const ok = (what) => console.log(`ok: ${what}`);
const text = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const VERSION_KEY = 'io.skillhost/version';

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Mismatch(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// install writes the test skill as SKILL/VERSION the way an operator does:
// staged beside the tree, then renamed into place.
function install(skill, version) {
  const stage = mkdtempSync(join(skillsDir, '.staging-'));
  copyFileSync(testskillBin, join(stage, 'skill'));
  chmodSync(join(stage, 'skill'), 0o755);
  const sha256 = createHash('sha256').update(readFileSync(testskillBin)).digest('hex');
  const manifest = {
    manifest_version: 1, name: skill, version, description: `Conformance probe ${skill}.`,
    entrypoint: 'skill', sha256, tags: ['test'],
    env: { TESTSKILL_NAME: skill, TESTSKILL_VERSION: version },
  };
  writeFileSync(join(stage, 'manifest.json'), JSON.stringify(manifest, null, 2));
  chmodSync(stage, 0o755);
  mkdirSync(join(skillsDir, skill), { recursive: true });
  renameSync(stage, join(skillsDir, skill, version));
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

async function httpFace() {
  const client = new Client({ name: 'skillhost-conformance', version: '1.0.0' });
  let changes = 0;
  let notify = () => {};
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
    notify();
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const info = client.getServerVersion();
  check(info && info.name === 'skillhost', 'serverInfo.name is skillhost', info);
  check(client.getServerCapabilities()?.tools?.listChanged === true, 'tools capability with listChanged', client.getServerCapabilities());
  ok(`initialize: ${info.name} ${info.version}, tools.listChanged`);

  // tools/list (the SDK parses it against the spec's schema: an object
  // input schema and, where present, an object output schema per tool).
  const tools = await listAll(client);
  const names = tools.map((t) => t.name);
  check(JSON.stringify(names) === JSON.stringify([...names].sort()), 'tools in a stable (sorted) order', names);
  for (const want of ['calc.evaluate', 'textkit.count', 'policy.search_policies', 'probe.echo', 'probe.big']) {
    check(names.includes(want), `tools/list has ${want}`, names);
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const evaluate = byName['calc.evaluate'];
  check(evaluate.description && evaluate.inputSchema.type === 'object' && evaluate.inputSchema.properties.expression, 'calc.evaluate has a description and its input schema', evaluate);
  check(evaluate.outputSchema?.type === 'object', 'calc.evaluate has its output schema', evaluate.outputSchema);
  check(evaluate.annotations?.readOnlyHint === true && evaluate.annotations?.destructiveHint === false, 'calc.evaluate annotated read-only, not destructive', evaluate.annotations);
  check(byName['probe.big'].outputSchema?.properties?.result?.type === 'string', "probe.big's string output schema wrapped under result", byName['probe.big'].outputSchema);
  check(byName['probe.echo']._meta?.[VERSION_KEY] === '1.0.0', 'probe.echo at 1.0.0', byName['probe.echo']._meta);
  ok(`tools/list: ${tools.length} tools, sorted, schemas and annotations`);

  // Calls (the SDK validates structuredContent against each output schema).
  let res = await client.callTool({ name: 'calc.evaluate', arguments: { expression: '(2+3)*4' } });
  check(!res.isError && res.structuredContent?.result === 20, 'calc.evaluate((2+3)*4) = 20', res);
  check(JSON.parse(text(res)).result === 20, 'the text rendering carries the same result', text(res));
  ok('tools/call calc.evaluate((2+3)*4) = 20, structuredContent and text');

  res = await client.callTool({ name: 'textkit.count', arguments: { text: 'hello 世界' } });
  check(!res.isError && res.structuredContent?.words === 3, 'textkit.count("hello 世界").words = 3', res);
  ok('tools/call textkit.count: 3 words in "hello 世界"');

  res = await client.callTool({ name: 'probe.big', arguments: { bytes: 3 } });
  check(!res.isError && res.structuredContent?.result === 'xxx' && text(res) === 'xxx', 'probe.big(3) = "xxx", wrapped', res);
  ok('tools/call of a tool with a string result: text "xxx", structuredContent {result}');

  res = await client.callTool({ name: 'calc.evaluate', arguments: { nope: 1 } });
  check(res.isError === true && text(res).includes('invalid_arguments'), 'bad arguments: isError with invalid_arguments', res);
  ok(`invalid arguments: isError, "${text(res).slice(0, 90)}..."`);

  res = await client.callTool({ name: 'calc.evaluate', arguments: { expression: '1/0' } });
  check(res.isError === true && text(res).length > 0, 'a tool that refuses: isError with a reason', res);
  ok(`tool error: isError, "${text(res).slice(0, 90)}"`);

  let refused;
  try {
    await client.callTool({ name: 'ghost.tool', arguments: {} });
  } catch (e) {
    refused = e;
  }
  check(refused && /no skill named ghost/.test(String(refused.message)), 'an unknown tool is a protocol error with the reason', refused && refused.message);
  ok('unknown tool: JSON-RPC error naming the reason');

  // Hot swap: a new version is installed; the client is told, and the next
  // list and call are the new version's.
  const announced = new Promise((resolve) => {
    notify = resolve;
  });
  install('probe', '1.1.0');
  await withTimeout(announced, 30000, 'notifications/tools/list_changed after installing probe 1.1.0');
  let echo;
  for (let i = 0; i < 50; i++) {
    echo = (await listAll(client)).find((t) => t.name === 'probe.echo');
    if (echo?._meta?.[VERSION_KEY] === '1.1.0') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  check(echo?._meta?.[VERSION_KEY] === '1.1.0', 'after list_changed, tools/list shows probe.echo at 1.1.0', echo?._meta);
  res = await client.callTool({ name: 'probe.echo', arguments: { msg: 'hot' } });
  check(!res.isError && res.structuredContent?.version === '1.1.0' && res.structuredContent?.msg === 'hot', 'probe.echo served by 1.1.0', res);
  ok(`hot swap: ${changes} list_changed notification(s), list and call at 1.1.0`);
  await client.close();
}

async function stdioFace(label, args, check1) {
  const transport = new StdioClientTransport({ command: hostBin, args, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => {
    stderr += d;
  });
  const client = new Client({ name: 'skillhost-conformance-stdio', version: '1.0.0' });
  try {
    await withTimeout(client.connect(transport), 60000, `${label}: initialize`);
    const names = (await listAll(client)).map((t) => t.name);
    check(names.includes('calc.evaluate') && names.includes('probe.echo'), `${label}: tools/list has calc.evaluate and probe.echo`, names);
    const res = await client.callTool({ name: 'probe.echo', arguments: { msg: label } });
    check(!res.isError && res.structuredContent?.msg === label, `${label}: probe.echo answers`, res);
    check1?.(res);
    ok(`${label}: ${names.length} tools listed, probe.echo served by ${res.structuredContent.version}`);
  } catch (e) {
    if (stderr) console.error(`--- ${label} stderr ---\n${stderr.slice(-3000)}`);
    throw e;
  } finally {
    await client.close();
  }
}

try {
  await httpFace();
  await stdioFace('stdio (embedded host)', ['mcp', '--skills', skillsDir, '--log-level', 'warn'], (res) =>
    check(res.structuredContent.version === '1.1.0', 'embedded: newest version serves', res.structuredContent));
  await stdioFace('stdio (bridge to the daemon)', ['mcp', '--addr', url, '--log-level', 'warn']);
  console.log('client: every check passed');
} catch (e) {
  console.log(`FAIL: ${e instanceof Mismatch ? e.message : (e && e.stack) || e}`);
  process.exit(1);
}
