// Command testskill is the skill the host's own tests run. One binary plays
// any skill name and version (TESTSKILL_NAME, TESTSKILL_VERSION from the
// manifest's env), so a test can install many versions without rebuilding,
// and TESTSKILL_MODE makes it misbehave in the ways the tests need.
package main
