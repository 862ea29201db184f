// Package console tests the operator console (pkg/console) in a real
// headless Chromium, driven by chromedp, against a real `host serve` with
// real skill processes: what an operator sees and does at /ui/. Screenshots
// land in test/artifacts/console/. Without Chromium the tests skip (or fail,
// when SKILLHOST_REQUIRE_BROWSER is set, as scripts/console-test.sh does).
package console
