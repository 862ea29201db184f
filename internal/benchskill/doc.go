// Command benchskill is the skillhost SDK skill the performance suite
// (cmd/skillbench) runs: two tools, echo (a small JSON object back) and blob
// (a 64 KiB result). One binary plays any skill name and version
// (BENCHSKILL_NAME, BENCHSKILL_VERSION from the manifest's env), so the
// suite can install 50 skills or 30 versions from a single build.
package main
