package similarity

import (
	"runtime"
	"runtime/debug"
)

// returnMemoryAt is the number of keywords from which the stage returns
// the memory a phase freed to the system before the next phase
// allocates, so that the heap's peak is one phase's, not two.
const returnMemoryAt = 1 << 20

// collect collects the garbage the read leaves (the URL tables, the
// lake's buffers) before the engine allocates, so that the engine's
// arrays take the freed memory instead of pushing the heap to twice its
// size. From returnMemoryAt keywords the freed memory is also returned to
// the system: at 10M web keywords, keeping it raised the peak from 4.9 to
// 5.6 GB. Below, it stays with the process for the engine to reuse,
// since memory given back costs a page fault for each page touched anew,
// and on a virtual machine first touches are dear (about 3.6 ms a MB of
// CPU on the 2-core machine of docs/perf): at a million web keywords,
// keeping it meant 28% fewer page faults and a run 0.97 times as long
// (medians of seven alternated runs), at the same peak.
func collect(keywords int) {
	if keywords >= returnMemoryAt {
		debug.FreeOSMemory()
		return
	}
	runtime.GC()
}
