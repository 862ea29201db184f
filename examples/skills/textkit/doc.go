// Command textkit is an example skillhost skill of small, exact text
// utilities that language models are bad at doing in their heads: counting
// characters and words (CJK-aware), making slugs, converting case and
// truncating without splitting a character.
package main
