// wordstats: a skillhost skill written in JavaScript. It speaks the skill
// protocol (sdk/proto/skill.proto) over go-plugin's handshake with
// @grpc/grpc-js, as docs/sdk.md ("Skills in other languages") describes:
// the magic cookie, the host-made server certificate on descriptor 3, the
// host's client certificate required on every connection, the gRPC health
// service, one handshake line on stdout, and exit when the host goes away.
//
// scripts/build-node-skill.sh bundles this file, its npm dependencies and
// skill.proto into one script, the version's verified entrypoint.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');
const skillProto = require('../../../sdk/proto/skill.proto'); // inlined as text by the bundler

// go-plugin's own services: the health check the host's Ping uses, and the
// controller whose Shutdown the host calls when it stops the skill.
const pluginProtos = `
syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
`;
const controllerProto = `
syntax = "proto3";
package plugin;
message Empty {}
service GRPCController { rpc Shutdown(Empty) returns (Empty); }
`;

const MAGIC_KEY = 'SKILLHOST_SKILL';
const MAGIC_VALUE = '8c4f3f0e-skillhost-skill-v1'; // sdk.Handshake
const APP_PROTOCOL_VERSION = 1; // sdk.Handshake.ProtocolVersion
const TLS_FD_ENV = 'SKILLHOST_TLS_FD'; // sdk.ServerTLSFDEnv
const MAX_MESSAGE_BYTES = 256 << 20; // sdk.MaxMessageBytes: the host enforces the manifest's limits

// log writes one hclog JSON line to stderr, which go-plugin re-logs in the
// host at its level (a line that is not JSON arrives only at debug). Never
// stdout: it carries the handshake line and nothing else.
function log(message, level = 'info') {
  const timestamp = new Date().toISOString().replace('Z', '000Z'); // go-plugin wants microseconds
  process.stderr.write(`${JSON.stringify({ '@level': level, '@message': message, '@timestamp': timestamp })}\n`);
}

function load(text) {
  const root = protobuf.parse(text, { keepCase: true }).root;
  return grpc.loadPackageDefinition(protoLoader.fromJSON(root.toJSON(), { keepCase: true, longs: Number, defaults: true }));
}

// The tools. Arguments arrive as JSON the host already validated against
// input_schema; results go back as JSON.
const tools = [
  {
    name: 'count',
    description: 'Count the words, lines and characters of a text.',
    input_schema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'The text to count.' } },
      required: ['text'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: { words: { type: 'integer' }, lines: { type: 'integer' }, chars: { type: 'integer' } },
      required: ['words', 'lines', 'chars'],
    },
    run({ text }) {
      const lines = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      return { words: words(text).length, lines, chars: [...text].length };
    },
  },
  {
    name: 'top_words',
    description: 'List the most frequent words of a text, most frequent first (ties alphabetically).',
    input_schema: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'The text.' },
        n: { type: 'integer', minimum: 1, maximum: 100, default: 3, description: 'How many words.' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    run({ text, n = 3 }) {
      const all = words(text.toLowerCase());
      if (all.length === 0) {
        throw new ToolError('empty_text', 'the text has no words');
      }
      const counts = new Map();
      for (const w of all) counts.set(w, (counts.get(w) || 0) + 1);
      const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
      return { words: top.map(([word, count]) => ({ word, count })) };
    },
  },
];

function words(text) { return text.match(/[\p{L}\p{N}']+/gu) || []; }

// ToolError is a refusal by the tool itself: it travels as
// InvokeResponse.error, not as a gRPC status (which means a transport failure).
class ToolError extends Error {
  constructor(code, message, retryable = false) { super(message); this.code = code; this.retryable = retryable; }
}

const skill = {
  Describe(_call, cb) {
    cb(null, {
      name: 'wordstats',
      version: '1.0.0',
      description: 'Word statistics of a text, served by a skill written in JavaScript.',
      tags: ['text'],
      sdk_version: `node ${process.version} @grpc/grpc-js`,
      tools: tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: Buffer.from(JSON.stringify(t.input_schema)),
        output_schema: t.output_schema ? Buffer.from(JSON.stringify(t.output_schema)) : Buffer.alloc(0),
        annotations: { read_only: true, idempotent: true },
      })),
    });
  },
  Invoke(call, cb) {
    const { tool, arguments: raw } = call.request;
    const t = tools.find((x) => x.name === tool);
    if (!t) {
      cb({ code: grpc.status.NOT_FOUND, details: `no tool ${JSON.stringify(tool)}` });
      return;
    }
    try {
      const args = raw && raw.length ? JSON.parse(Buffer.from(raw).toString('utf8')) : {};
      cb(null, { result: Buffer.from(JSON.stringify(t.run(args))) });
    } catch (err) {
      if (err instanceof ToolError) {
        cb(null, { error: { code: err.code, message: err.message, retryable: err.retryable } });
        return;
      }
      log(`${tool}: ${err.stack || err}`, 'error');
      cb(null, { error: { code: 'internal', message: `${tool}: ${err.message}`, retryable: false } });
    }
  },
};

// serverIdentity reads the PEM (certificate, then key) the host wrote on the
// descriptor named by SKILLHOST_TLS_FD, and closes it.
function serverIdentity() {
  const v = process.env[TLS_FD_ENV];
  delete process.env[TLS_FD_ENV];
  const fd = Number(v);
  if (!Number.isInteger(fd) || fd < 3) {
    throw new Error(`${TLS_FD_ENV}=${JSON.stringify(v)}: not a descriptor above stderr (this skill needs the host's certificate)`);
  }
  const pem = fs.readFileSync(fd, 'utf8');
  fs.closeSync(fd);
  const cert = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/);
  const key = pem.match(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+?-----END [A-Z ]*PRIVATE KEY-----\n?/);
  if (!cert || !key) throw new Error(`${TLS_FD_ENV}=${fd}: no PEM certificate and key`);
  return { cert_chain: Buffer.from(cert[0]), private_key: Buffer.from(key[0]) };
}

function main() {
  if (process.env[MAGIC_KEY] !== MAGIC_VALUE) {
    process.stderr.write('This is a skillhost skill: the skillhost daemon runs it; it is not meant to be run by hand.\n');
    process.exit(1);
  }
  const clientCert = process.env.PLUGIN_CLIENT_CERT;
  if (!clientCert) {
    log('PLUGIN_CLIENT_CERT is not set: the host must send its client certificate (AutoMTLS)', 'error');
    process.exit(1);
  }
  const creds = grpc.ServerCredentials.createSsl(Buffer.from(clientCert), [serverIdentity()], true);

  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES, 'grpc.max_send_message_length': MAX_MESSAGE_BYTES });
  const pb = load(skillProto);
  server.addService(pb.skillhost.skill.v1.Skill.service, skill);
  const health = load(pluginProtos);
  server.addService(health.grpc.health.v1.Health.service, {
    Check(call, cb) {
      // go-plugin asks for the service "plugin".
      cb(null, { status: 'SERVING' });
    },
  });
  const ctl = load(controllerProto);
  server.addService(ctl.plugin.GRPCController.service, {
    Shutdown(_call, cb) {
      cb(null, {});
      log('shutdown asked by the host');
      setImmediate(() => server.tryShutdown(() => process.exit(0)));
    },
  });

  const dir = fs.mkdtempSync(path.join(process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir(), 'plugin'));
  const sock = path.join(dir, 'wordstats.sock');
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on('exit', cleanup);
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));

  server.bindAsync(`unix:${sock}`, creds, (err) => {
    if (err) {
      log(`listen on ${sock}: ${err.message}`, 'error');
      process.exit(1);
    }
    // The handshake line: CORE-PROTOCOL-VERSION|APP-PROTOCOL-VERSION|
    // NETWORK-TYPE|NETWORK-ADDR|PROTOCOL. No sixth field: the host already
    // trusts the certificate it made for this process.
    process.stdout.write(`1|${APP_PROTOCOL_VERSION}|unix|${sock}|grpc\n`);
  });

  // Exit when the host goes away. The host asks first (Shutdown above);
  // when it dies, the kernel sends SIGTERM (Pdeathsig) and this poll sees
  // the new parent in case that signal was missed. stdin is no signal: the
  // host may hand the skill its own stdin, or /dev/null.
  const ppid = process.ppid;
  setInterval(() => {
    if (process.ppid !== ppid) {
      log('the host is gone (new parent process); exiting', 'warn');
      process.exit(0);
    }
  }, 1000).unref();
}

main();
