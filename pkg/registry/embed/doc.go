// Package embed is the registry's optional second opinion: a
// [registry.Reranker] that reorders the best text hits of a search by how
// close each tool is, in an embedding space, to the request.
//
// The text ranking (package textindex) finds tools that share words with a
// request; it cannot know that "hire a car" is about a tool that "books a
// vehicle". An embedding model can, but it is a network call to a service
// that may be slow, down or expensive, so it is kept out of the critical
// path in three ways:
//
//   - It only reranks. The registry hands over the top text hits (a pool of
//     a few dozen), never the whole catalog, and the final score mixes both
//     signals: α·text + (1-α)·cosine, with the pool's text scores divided by
//     their maximum so that both lie in [0, 1]. A tool the text ranking did
//     not find cannot be returned, and exact name matches keep most of their
//     weight.
//   - Tool vectors are computed once per tool definition. They are cached,
//     bounded (LRU), under the sha256 of everything the embedded text is
//     made of: the tool's qualified name, description, tags and input
//     schema. A reload that changes one description re-embeds that one tool;
//     a reload that changes nothing re-embeds nothing. Missing vectors of a
//     search go out in one batched request together with the query, two
//     searches needing the same missing tool share one computation, and
//     [Reranker.Watch] embeds new tools in the background as the registry
//     changes, so a search usually costs one input (its query) or none (a
//     repeated query).
//   - Failure is ordinary. Every search is bounded by a short timeout (2 s by
//     default) on top of the caller's context; an error, timeout or malformed
//     answer is returned to the registry, which keeps the text order. The
//     request never fails because of the embedding service, and the log says
//     so once per interval (with a count), not once per request, then once
//     more when the service answers again.
//
// The endpoint is anything that speaks OpenAI's /embeddings API (OpenAI,
// Azure through a proxy, Ollama, vLLM, llama.cpp's server, ...), reached
// with github.com/sashabaranov/go-openai.
package embed
