// Package skillmd reads Agent Skills: folders holding a SKILL.md (YAML front matter, then
// Markdown instructions) and the files those instructions refer to (scripts/, references/,
// assets/), in the open format most agent clients share.
//
// It is the one place that decides whether such a folder may be offered to a model, and what
// of it may be read. It parses and judges the front matter by the specification's rules,
// reporting every problem at once with its file, line and field; it lists the folder's files
// and hashes them into a digest that serves as the fingerprint for hot reload (a Cache keeps a
// rescan to the files that changed); it summarises a skill for listings (Info); and it opens
// a listed file for reading, never one outside the folder, behind a symlink out of it, hidden,
// or over the size caps. It is as lenient as the specification asks clients to be (a name that
// differs from its folder, an unknown field or an over-long description is a warning, not a
// refusal), and strict where leniency would be unsafe: the folder name is the skill's identity
// and must be valid, nothing is read outside the folder, and every read is capped.
//
// The package only reads. Nothing in an instruction skill's folder is ever executed by the
// host, whatever its mode or name says; scripts are text a model may read, and running them is
// the business of whoever holds the model's tools. A folder that also holds a manifest.json and
// a binary is a "tied" skill: the binary side is judged by pkg/manifest and launched by the
// loader as any other binary skill, and this package only says which of its tools the
// instructions name, so that activating the instructions can bring those tools along.
package skillmd
