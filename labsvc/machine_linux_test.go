package labsvc_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// interruptTime is the processor time all processors have spent so far
// handling interrupts, hard and soft, from /proc/stat, in its 10 ms
// ticks. Without CONFIG_IRQ_TIME_ACCOUNTING (this machine's kernel, 6.18,
// is built without it) a thread's processor clock is charged for the
// interrupts handled while it runs, the loopback packets of other
// programs included, so a spin that reads its own clock computes a little
// less than it counts when the machine is busy with the network. Time the
// hypervisor takes (steal) is not charged (CONFIG_PARAVIRT_TIME_ACCOUNTING)
// and not counted here.
func interruptTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat begins %.60q, want the cpu line", line)
	}
	var ticks int64
	for _, i := range []int{6, 7} { // irq, softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat cpu field %d: %w", i, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
