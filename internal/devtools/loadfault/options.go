package loadfault

import (
	"io"
	"sync"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

// Options configures a run. The zero value is usable: it is the full run.
type Options struct {
	// Duration is how long the load runs. Default DefaultDuration.
	Duration time.Duration
	// Users is how many users load the gateways, each with two devices. Default DefaultUsers.
	Users int
	// Think is the mean pause of a user between two operations. Default DefaultThink: the
	// default users then offer about 3 requests a second besides their devices' traffic, which
	// the store the harness runs (FerretDB on SQLite, whose finds scan whole collections) serves
	// through a Redis restart on a small machine. Shorter pauses find where it stops doing so
	// (see the README's reliability section).
	Think time.Duration
	// FaultRounds is how many times each kind of fault is injected. Default
	// DefaultFaultRounds; negative: none.
	FaultRounds int
	// Seed makes the run's choices repeatable. Default: from the clock.
	Seed int64
	// Dir holds the run's processes' files. Default: a new temporary directory, removed after.
	Dir string
	// Gateway is the command line that starts one gateway instance, to which the harness adds
	// serve's flags (-addr, -mongo-uri, -redis-url, ...). Default: msggate's "serve", built
	// from this checkout into Dir (testenv.BuildGateway).
	Gateway []string
	// GatewayEnv is added to each gateway process's environment.
	GatewayEnv []string
	// Out receives progress lines and the report. Default: discarded.
	Out io.Writer
}

// lockedWriter lets the run's goroutines (faults, progress) print to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Defaults of Options' zero fields: the full run.
const (
	DefaultDuration    = 60 * time.Second
	DefaultUsers       = 200
	DefaultThink       = 60 * time.Second
	DefaultFaultRounds = 1
)

func (o Options) withDefaults() Options {
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.Users <= 0 {
		o.Users = DefaultUsers
	}
	if o.Think <= 0 {
		o.Think = DefaultThink
	}
	if o.FaultRounds == 0 {
		o.FaultRounds = DefaultFaultRounds
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	o.Out = &lockedWriter{w: o.Out}
	return o
}

// withGateway fills in o.Gateway, when it is empty, with msggate built into o.Dir: this
// program is a tool, not the product, and cannot serve itself.
func (o Options) withGateway() (Options, error) {
	if len(o.Gateway) > 0 {
		return o, nil
	}
	bin, err := testenv.BuildGateway(o.Dir, o.Out)
	if err != nil {
		return o, err
	}
	o.Gateway = []string{bin, "serve"}
	return o, nil
}

// devicesPerUser is how many sync clients each user keeps live.
const devicesPerUser = 2

// instances is how many gateway processes share the stores.
const instances = 2
