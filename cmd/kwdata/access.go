package main

import "path/filepath"

// accessDir is where the key registry and the counters live.
func accessDir(data string) string { return filepath.Join(data, "access") }
