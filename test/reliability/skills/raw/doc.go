// Command raw is a hand-written skillpb server (no SDK) that breaks the
// protocol in the ways RAW_MODE chooses:
//
//	protocol      tools "good", "badjson" (a result that is not JSON), "empty"
//	              (no result at all), "oversize" (RAW_BYTES bytes of valid JSON),
//	              "liar" (a result that breaks its own output schema) and
//	              "panic" (the handler panics, which kills the process)
//	manytools     describes RAW_TOOLS tools (default 10,000)
//	hugeschema    one tool whose input schema is RAW_MIB MiB (default 10)
//	hugedescribe  a Describe answer of about RAW_MIB MiB (default 20) in many
//	              tools, each under the per-schema cap
//	ref           one tool whose input schema is the JSON in RAW_SCHEMA and
//	              output schema RAW_OUTPUT_SCHEMA (a $ref to a file or URL, say)
//	slowdescribe  Describe never answers
package main
