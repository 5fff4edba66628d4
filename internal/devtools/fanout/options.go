package fanout

import (
	"io"
	"time"
)

// Options are a run's parameters; the zero value of each takes its default.
type Options struct {
	// Devices is how many devices connect, all at once (as after a gateway restart), spread
	// round-robin over the group's members.
	Devices int
	// Members is the group's size; default Devices (one device a member). At most
	// im.MaxGroupMembers: more devices than that are several devices of one member.
	Members int
	// Store is where the gateways keep messages: StoreFerretDB (default), one FerretDB process
	// they share, or StoreEmbedded, the gateway's embedded store (FerretDB on SQLite in its
	// own process, one instance only).
	Store string
	// Instances is how many gateway processes the devices are spread over (round-robin).
	Instances int
	// Messages is how many messages are sent to the group, Interval apart.
	Messages int
	Interval time.Duration
	// Restart measures a reconnect storm as after a gateway restart: a device of each member
	// first connects, in waves of RestartWave (so that Redis knows their users, as it does those of a
	// gateway that served them), then the gateways are stopped and started again, and the
	// devices all connect at once to the new processes. Without it, the storm is the devices'
	// first connection, with Redis knowing nothing of the group's members.
	Restart bool
	// Settle is how long the devices stay idle once subscribed while the gateways' memory and
	// goroutines are read, at their lowest (the gateway offers no way to force a GC; see
	// Report.HeapPerDevice).
	Settle time.Duration
	// Dir holds the run's processes' files and logs; empty: a temporary directory, removed after.
	Dir string
	// Command runs msggate: Command+["serve", flags...] is a gateway and
	// Command+["group", flags...] makes the group. Default: msggate built from this checkout
	// into Dir (testenv.BuildGateway).
	Command []string
	// ChildEnv is added to the child processes' environment (a test marks its children so).
	ChildEnv []string
	// Out receives progress and the table.
	Out io.Writer
}

// The stores Options.Store names.
const (
	StoreFerretDB = "ferretdb"
	StoreEmbedded = "embedded"
)

// Defaults.
const (
	DefaultDevices   = 1000
	DefaultInstances = 1
	DefaultMessages  = 20
	DefaultInterval  = 200 * time.Millisecond
	DefaultSettle    = 5 * time.Second
	// RestartWave is how many devices connect at a time before a restart (Options.Restart).
	RestartWave = 1000
)

func (o Options) withDefaults() Options {
	if o.Devices <= 0 {
		o.Devices = DefaultDevices
	}
	if o.Members <= 0 {
		o.Members = o.Devices
	}
	if o.Store == "" {
		o.Store = StoreFerretDB
	}
	if o.Instances <= 0 {
		o.Instances = DefaultInstances
	}
	if o.Messages <= 0 {
		o.Messages = DefaultMessages
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return o
}
