// Command hog is a skill that wants more than its share: memory without
// bound, CPU, file descriptors. With the manifest's limits (memory_mb,
// cpu_seconds, max_open_files) the kernel stops it; its "limits" tool
// reports what the kernel says its limits are.
package main
