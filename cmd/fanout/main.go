// Command fanout measures a reconnect storm and one message to a big group (internal/devtools/fanout):
// N devices of the members of a group dial K gateway processes over WebSocket all at once; it
// waits until every subscription is live, sends M messages to the group and prints how long
// the start took, what each message cost in Redis, how long the devices waited for it and
// what each idle device holds in the gateway (resident memory, heap, goroutines).
//
//	go run ./cmd/fanout [-devices N] [-members M] [-store ferretdb|embedded] [-instances 1|2]
//	    [-restart] [-messages M] [-interval D] [-settle D] [-dir D] [-gateway PATH]
//
// The gateways, and the `group` run that makes the group, are msggate itself: built from this
// checkout into the run's directory first (go build), or the binary -gateway names. The store
// and redis-server are started as in the tests, so the tool needs a source checkout and
// redis-server.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/msggate/msggate/internal/devtools/fanout"
	"github.com/msggate/msggate/internal/devtools/toolmain"
)

func main() { toolmain.Run("fanout", run) }

// run parses the flags in args and runs the measurement, its progress and table to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := fanout.Options{Out: stdout}
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.Devices, "devices", fanout.DefaultDevices, "devices, all dialling at once (as after a gateway restart), spread round-robin over the members")
	fs.IntVar(&o.Members, "members", 0, "members of the group, at most 5000 (default: -devices, one device each)")
	fs.StringVar(&o.Store, "store", fanout.StoreFerretDB, "the gateways' store: "+fanout.StoreFerretDB+" (one FerretDB process) or "+fanout.StoreEmbedded+" (the gateway's embedded store, one instance)")
	fs.IntVar(&o.Instances, "instances", fanout.DefaultInstances, "gateway processes the devices are spread over")
	fs.IntVar(&o.Messages, "messages", fanout.DefaultMessages, "messages sent to the group")
	fs.DurationVar(&o.Interval, "interval", fanout.DefaultInterval, "time between two sends")
	fs.BoolVar(&o.Restart, "restart", false, "measure the storm of a gateway restart: the devices connect first in waves (Redis then knows their users), the gateways restart, and the devices all reconnect at once; without it, the storm is the devices' first connection")
	fs.DurationVar(&o.Settle, "settle", fanout.DefaultSettle, "idle time after the last subscription before the gateways' memory is read")
	fs.StringVar(&o.Dir, "dir", "", "directory for the run's processes and logs (default: a new temporary one, removed after)")
	gateway := fs.String("gateway", "", "msggate binary to run as the gateways and to make the group (default: built from this checkout into the run's directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *gateway != "" {
		o.Command = []string{*gateway}
	}
	_, err := fanout.Run(ctx, o)
	return err
}
