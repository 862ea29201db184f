// Package openaitools renders registry tools as the tools of an
// OpenAI-compatible chat completion request, for the faces that hand tools
// to a model (GET /v1/openai/tools, the agent loop). It lives beside the
// registry rather than in it so that the registry imports no client library
// of any face.
package openaitools
