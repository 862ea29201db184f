// Package agent is skillhost's LLM agent loop: it lets a model reached
// through any OpenAI-compatible chat completions endpoint (OpenAI, DeepSeek,
// Ollama, vLLM, …) use the tools of the registry.
//
// One run, for one [Request] under one [Profile]:
//
//  1. The prefilter ([registry.Snapshot.Search]) picks the few tools most
//     relevant to the user's messages among those the profile allows (its
//     tags, skills and mode); only those, plus a "delegate_<profile>" tool for
//     each sub-agent the profile may hand work to, are sent to the model.
//  2. The messages and tools go to the model through go-openai, streamed
//     when the caller streams. The request's size is estimated first
//     ([EstimateTokens]); a request over the profile's context budget fails
//     with context_budget_exceeded instead of being truncated, because an
//     endpoint such as Ollama would cut it silently.
//  3. Tool calls of one turn run concurrently through [registry.Registry.Invoke];
//     each result, or each error as {"error": {...}}, goes back as a tool
//     message. A tool the model invented, arguments that are not JSON or that
//     fail the schema are answered as tool errors naming the problem, so the
//     model can correct itself, and are counted.
//  4. The loop repeats until the model answers in text or the profile's step
//     limit is reached, which the response then says.
//
// Model errors: 429, 5xx, timeouts and dropped connections are retried with
// capped exponential backoff (honouring Retry-After); authentication and
// other 4xx errors are not. Three failed attempts in a row end the run. An
// endpoint that rejects tool use (a 4xx whose message is about tools) gets
// the same request again without tools, and the response notes it.
//
// A delegate call runs a sub-agent: a new session of another profile with its
// own history (only the task the parent wrote) and its own tool view, down to
// a depth limit. Sessions share nothing but the run's counters and events.
//
// [Agent.Handler] serves POST /v1/chat, as JSON or as server-sent events.
// The API key is sent to the model endpoint only; it is never logged, and
// skills never see it (the loader gives a skill only its manifest's env).
package agent
