package similarity

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

func TestBigSliceAsksForHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v)", strings.TrimSpace(string(mode)), err)
	}
	s := bigSlice[uint32](16 << 20) // 64 MiB
	if len(s) != 16<<20 {
		t.Fatalf("len %d", len(s))
	}
	for i := range s {
		if s[i] != 0 {
			t.Fatalf("s[%d] = %d, not zeroed", i, s[i])
		}
		s[i] = uint32(i)
	}
	mid := uintptr(unsafe.Pointer(&s[len(s)/2]))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("cannot read smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= mid && mid < hi
			continue
		}
		if in && strings.HasPrefix(line, "THPeligible:") {
			if strings.TrimSpace(strings.TrimPrefix(line, "THPeligible:")) != "1" {
				t.Fatalf("the slice's mapping is not eligible for huge pages: %s", line)
			}
			return
		}
	}
	t.Fatal("no mapping in smaps holds the slice")
}
