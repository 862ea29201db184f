"""A stdio MCP server in plain Python (no SDK): one tool, "shout".

pkg/mcprt's tests run it with the operator-allowed python3 to show that a
skill's server can be written in any language. It logs to stderr, as MCP
servers must; stdout carries the protocol alone.
"""
import json
import os
import sys

TOOLS = [{
    "name": "shout",
    "description": "Returns the text in upper case, with the interpreter's HOME.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}]


def answer(msg_id, result=None, error=None):
    out = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def main():
    print("pyserver ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue  # a notification
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            answer(msg["id"], {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "pyserver", "version": "1.0.0"},
            })
        elif method == "tools/list":
            answer(msg["id"], {"tools": TOOLS})
        elif method == "tools/call" and params.get("name") == "shout":
            text = params.get("arguments", {}).get("text", "")
            answer(msg["id"], {
                "content": [{"type": "text", "text": text.upper()}],
                "structuredContent": {"text": text.upper(), "home": os.environ.get("HOME", "")},
            })
        elif method == "ping":
            answer(msg["id"], {})
        else:
            answer(msg["id"], error={"code": -32601, "message": "unknown method " + str(method)})


if __name__ == "__main__":
    main()
