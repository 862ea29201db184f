package mcprt

import (
	"errors"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// The errors of this package, in one place so that callers can branch on
// them with errors.Is. Every error returned wraps one of these and says which
// skill, file or tool it is about.
var (
	// ErrNoCommand: the manifest names no command to run.
	ErrNoCommand = errors.New("the manifest names no command to run")
	// ErrAbsoluteCommand: the command is an absolute path. A manifest may
	// never pick a host binary; interpreters come from the operator's
	// allow map (--runtime name=/path) only.
	ErrAbsoluteCommand = errors.New("the command is an absolute path; name an interpreter the operator allows (--runtime name=/path) or a file inside the version folder")
	// ErrCommandEscapes: the command is a path that leaves the version
	// folder ("..", or not local).
	ErrCommandEscapes = errors.New("the command leaves the version folder")
	// ErrUnknownInterpreter: the command is a bare name that the operator's
	// allow map does not hold. Bare names are never looked up in PATH.
	ErrUnknownInterpreter = errors.New("the command is not an interpreter the operator allows")
	// ErrBadInterpreter: an allow-map entry is malformed or names no
	// executable file.
	ErrBadInterpreter = errors.New("bad interpreter entry")
	// ErrCommandNotFound: the command names a file the version folder does
	// not hold as an executable regular file.
	ErrCommandNotFound = errors.New("the command is not an executable file in the version folder")

	// ErrDigestMismatch: the version folder (or its private copy) does not
	// hash to the manifest's digest. Usually a copy in progress, so the
	// loader should treat the version as incomplete, not failed.
	ErrDigestMismatch = errors.New("the folder digest does not match the manifest")
	// ErrUnsupportedFile: the version folder holds something the digest
	// cannot vouch for: a symbolic link, a device, a socket, or a name with
	// a newline or backslash.
	ErrUnsupportedFile = manifest.ErrUnsupportedFile
	// ErrFolderTooLarge: the version folder holds more files or bytes than
	// the caps allow.
	ErrFolderTooLarge = manifest.ErrFolderTooLarge

	// ErrInitializeTimeout: the server did not finish the MCP handshake
	// (initialize and the first tools/list) within the start timeout. The
	// process is killed.
	ErrInitializeTimeout = errors.New("the MCP server did not answer initialize in time")
	// ErrStdoutJunk: the server wrote lines to stdout that are not JSON-RPC.
	// stdout belongs to the protocol; logs go to stderr. Junk lines are
	// skipped and logged; this error is what a start that failed after
	// junk reports.
	ErrStdoutJunk = errors.New("the MCP server wrote non-JSON-RPC output to stdout")
	// ErrExited: the server process exited (during start, or later: see
	// Instance.Exited).
	ErrExited = errors.New("the MCP server exited")
	// ErrNoTools: the server describes no tool this host can serve.
	ErrNoTools = errors.New("the MCP server describes no tool that can be served")
)
