// Command policy is an example skillhost skill: search over a small bundled
// corpus of company policies in Chinese and English (travel expenses, leave,
// information security, remote work, code of conduct, data retention).
package main
