package fanout

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"
)

// Report is a run's figures.
type Report struct {
	Devices, Members, Instances, Messages int
	Store                                 string
	// Restart: the storm was the devices reconnecting to restarted gateways (Options.Restart),
	// not their first connection.
	Restart bool

	// LiveAfter is the time from the first device's dial until every subscription streamed
	// live (msggate_sync_subscribers_live, summed over the instances, up by Devices): all the
	// devices dial at once, as after a gateway restart.
	LiveAfter time.Duration
	// StartGoroutinesPerDevice is the most goroutines the gateways held while the devices
	// started (sampled every 250 ms), less before, over the devices.
	StartGoroutinesPerDevice float64
	// StartMongoCommands is the MongoDB commands the gateways made from before the devices
	// connected until all were live.
	StartMongoCommands float64
	// StartGatewayCPU is the CPU time the gateway processes used from the first dial until
	// all subscriptions were live (the embedded store's included: it runs in the gateway's
	// process); StartToolCPU is this tool's over the same time: the devices' side of every
	// connection, on the same machine. LoadBefore and LoadLive are the machine's one-minute
	// load average at the first dial and once all were live.
	StartGatewayCPU, StartToolCPU time.Duration
	LoadBefore, LoadLive          float64

	// RedisCommands is the Redis commands the send phase took per message: every command the
	// gateways ran from just before the first send until every device had every message (or
	// the wait ended), divided by the messages. RedisIdlePerSecond is the rate of commands with
	// the devices connected and nothing sent, measured before; RedisCommandsNet is
	// RedisCommands less that rate over the send phase.
	RedisCommands, RedisIdlePerSecond, RedisCommandsNet float64
	// TopCommands are the commands the send phase ran most, with their calls per message.
	TopCommands []CommandCount
	// RedisBytes is the growth of Redis's used_memory over the send phase per message.
	RedisBytes float64

	// Delivery times, from the start of a send to a device reading its NEW_MESSAGE, over every
	// (device, message) pair that arrived.
	P50, P99, Max time.Duration
	// Complete is the devices that got every message; Missing the (device, message) pairs that
	// never arrived; Dropped the devices whose connection or subscription the gateway ended
	// (each connected again), Reconnects the times that happened; GaveUp the devices that
	// could not connect again.
	Complete, Missing, Dropped, Reconnects, GaveUp int
	// DropCause is why one dropped device's connection or subscription ended.
	DropCause string

	// HeapPerDevice and GoroutinesPerDevice are the growth, summed over the instances, of
	// go_gc_heap_live_bytes and go_goroutines from before the devices connected to
	// their lowest over the Settle after all were subscribed, divided by the devices. The live
	// heap is what the last GC marked: no garbage, as of that GC.
	HeapPerDevice, GoroutinesPerDevice float64
	// StackPerDevice is the growth of go_memstats_stack_inuse_bytes, likewise: the devices'
	// goroutines' stacks, which the heap figure leaves out.
	StackPerDevice float64
	// RSSPerDevice is the growth of the gateway processes' resident memory (VmRSS) from before
	// the devices connected to its lowest over the Settle, over the devices: everything the
	// process holds for them, what the Go runtime keeps but does not use included.
	RSSPerDevice float64
	Settle       time.Duration
}

func (r *Report) start(liveAfter time.Duration, before []gatewayFigures, peakGoroutines float64, started []gatewayFigures) {
	r.LiveAfter = liveAfter
	r.StartGoroutinesPerDevice = peakGoroutines / float64(r.Devices)
	for i := range before {
		r.StartMongoCommands += started[i].MongoCommands - before[i].MongoCommands
	}
}

func (r *Report) startCPU(before, live cpuTimes) {
	for i := range before.gateways {
		r.StartGatewayCPU += live.gateways[i] - before.gateways[i]
	}
	r.StartToolCPU = live.tool - before.tool
}

func (r *Report) redis(idleStart, idleEnd redisFigures, idleTook time.Duration, sendStart, sendEnd redisFigures, sendTook time.Duration) {
	m := float64(r.Messages)
	r.RedisIdlePerSecond = float64(idleEnd.Commands-idleStart.Commands) / idleTook.Seconds()
	r.RedisCommands = float64(sendEnd.Commands-sendStart.Commands) / m
	r.RedisCommandsNet = r.RedisCommands - r.RedisIdlePerSecond*sendTook.Seconds()/m
	r.RedisBytes = float64(sendEnd.UsedMemory-sendStart.UsedMemory) / m
	for name, n := range sendEnd.ByCommand {
		if d := n - sendStart.ByCommand[name]; d > 0 {
			r.TopCommands = append(r.TopCommands, CommandCount{Name: name, PerMessage: float64(d) / m})
		}
	}
	slices.SortFunc(r.TopCommands, func(a, b CommandCount) int { return cmp.Compare(b.PerMessage, a.PerMessage) })
	r.TopCommands = r.TopCommands[:min(len(r.TopCommands), topCommands)]
}

// CommandCount is one Redis command's calls per message.
type CommandCount struct {
	Name       string
	PerMessage float64
}

// topCommands is how many commands the report names: enough to see where a message's cost goes.
const topCommands = 6

func (r *Report) gateways(before, idle []gatewayFigures) {
	var heap, stack, goroutines, rss float64
	for i := range before {
		rss += idle[i].RSS - before[i].RSS
		heap += idle[i].HeapBytes - before[i].HeapBytes
		stack += idle[i].StackBytes - before[i].StackBytes
		goroutines += idle[i].Goroutines - before[i].Goroutines
	}
	r.HeapPerDevice = heap / float64(r.Devices)
	r.StackPerDevice = stack / float64(r.Devices)
	r.GoroutinesPerDevice = goroutines / float64(r.Devices)
	r.RSSPerDevice = rss / float64(r.Devices)
}

func (r *Report) deliveries(devices []*device, sends []sent) {
	var took []time.Duration
	for _, d := range devices {
		all := true
		for _, s := range sends {
			if at, ok := d.arrival(s.seq); ok {
				took = append(took, at.Sub(s.began))
			} else {
				all = false
				r.Missing++
			}
		}
		if all {
			r.Complete++
		}
		if n, why := d.reconnected(); n > 0 {
			r.Dropped++
			r.Reconnects += n
			r.DropCause = why.Error()
		}
		if d.gone() {
			r.GaveUp++
		}
	}
	slices.Sort(took)
	r.P50, r.P99 = percentile(took, 0.50), percentile(took, 0.99)
	if len(took) > 0 {
		r.Max = took[len(took)-1]
	}
}

// percentile is the nearest-rank percentile p of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// TableHeader is the header of the markdown table Print writes; docs/ keeps runs under it.
const TableHeader = "| store | devices (members) | instances | all live after | MongoDB commands to start | Redis commands/message | Redis bytes/message | delivery p50 | p99 | max | got every message | gateway RSS/device | memory/device (heap + stacks) | goroutines/device idle (starting) |\n" +
	"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

// Row is the report's row of the table.
func (r *Report) Row() string {
	return fmt.Sprintf("| %s | %d (%d) | %d | %.1f s | %.0f | %.0f | %.0f | %s | %s | %s | %d/%d | %.1f KiB | %.1f KiB (%.1f + %.1f) | %.2f (%.2f) |",
		r.Store, r.Devices, r.Members, r.Instances, r.LiveAfter.Seconds(), r.StartMongoCommands, r.RedisCommands, r.RedisBytes,
		ms(r.P50), ms(r.P99), ms(r.Max), r.Complete, r.Devices, r.RSSPerDevice/1024,
		(r.HeapPerDevice+r.StackPerDevice)/1024, r.HeapPerDevice/1024, r.StackPerDevice/1024, r.GoroutinesPerDevice, r.StartGoroutinesPerDevice)
}

// Print writes the table and what its figures leave out.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n%s\n\n", TableHeader, r.Row())
	fmt.Fprintf(w, "%d messages. Redis idle with the devices connected: %.1f commands/s; less that, %.0f commands/message.\n",
		r.Messages, r.RedisIdlePerSecond, r.RedisCommandsNet)
	if r.Restart {
		fmt.Fprintln(w, "The storm: the devices reconnecting at once to restarted gateways, Redis knowing their users.")
	} else {
		fmt.Fprintln(w, "The storm: the devices' first connection, Redis knowing nothing of the group's members.")
	}
	fmt.Fprintf(w, "CPU from the first dial until all were live: gateway %.1f s, this tool (the devices) %.1f s, in %.1f s; machine load average %.1f at the first dial, %.1f once all were live.\n",
		r.StartGatewayCPU.Seconds(), r.StartToolCPU.Seconds(), r.LiveAfter.Seconds(), r.LoadBefore, r.LoadLive)
	if len(r.TopCommands) > 0 {
		fmt.Fprint(w, "Redis commands per message, most first:")
		for _, c := range r.TopCommands {
			fmt.Fprintf(w, " %s %.1f", c.Name, c.PerMessage)
		}
		fmt.Fprintln(w)
	}
	if r.Missing > 0 || r.Dropped > 0 || r.GaveUp > 0 {
		fmt.Fprintf(w, "%d deliveries never arrived; the gateway ended %d devices' connections or subscriptions (%d times; each connected again), %d devices gave up.\n",
			r.Missing, r.Dropped, r.Reconnects, r.GaveUp)
		if r.DropCause != "" {
			fmt.Fprintf(w, "One of them ended with: %s\n", r.DropCause)
		}
	}
	fmt.Fprintf(w, "All live after: from the first dial, every device dialling at once, until msggate_sync_subscribers_live counted them all. "+
		"Gateway figures: VmRSS, go_gc_heap_live_bytes (the heap the last GC found live), go_memstats_stack_inuse_bytes and go_goroutines, lowest over %s idle after the last subscription, less before the devices; "+
		"goroutines while starting: the most sampled every 250 ms until all were live.\n", r.Settle)
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}
