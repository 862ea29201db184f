// Package textindex is the registry's prefilter: given a user request, it
// picks the few tools (3–5) worth showing a model, out of thousands.
//
// It is a BM25F index. Each tool is a document with separately weighted
// fields: the words of its name, its description, its tags, its skill's
// name and description, its parameter names, its parameter descriptions
// (with enum values), and adjacent name-word pairs. Terms come from one
// analyzer shared by documents and queries (see Tokenize): identifiers are
// split (snake_case, camelCase, dots, digits), English words lose stopwords
// and are Porter-stemmed, and Chinese, Japanese and Korean text, which has no
// spaces, becomes character unigrams plus bigrams, so "查询报销制度" meets a
// tool tagged "报销". Arithmetic reads as words ("17*23+4" as "17 times 23
// plus 4"), so a bare expression still finds a calculator. On the query
// side, a word's longest prefix that the index holds also counts, a little
// ("calculate" meets "calc"), and a word a long prompt repeats saturates.
// On top of BM25F, a tool whose name words the request covers is boosted:
// names are the most deliberate summary a tool has. The
// weights and every other choice were measured on the BFCL tool-retrieval
// data; TUNING.md logs what each bought, and Evaluate and LoadBFCL let the
// host re-run the measurement.
//
// The shape follows from how the registry uses it. Reads vastly outnumber
// writes and must never wait, so an Index is immutable and any number of
// goroutines may Search it; the registry keeps the current one behind an
// atomic.Pointer. Writes are per skill (a skill loads, reloads or goes
// away), so Replace returns a new Index that differs in one skill and
// shares everything else with its receiver: the term dictionary is cut
// into shards by hash and each posting list into blocks by slot, and
// Replace copies only the shards and blocks the skill's terms fall in, so
// a publish at 10,000 tools costs what the skill's own documents cost. Corpus statistics (document
// count, field lengths, document frequency) are global and kept exact, so
// an index reached by any sequence of Replace calls ranks exactly like one
// built by New over the same tools. Search accumulates scores in a dense
// array indexed by document slot, taken from a sync.Pool, and calls the
// caller's Accept filter only for candidates that would make the cut.
package textindex
