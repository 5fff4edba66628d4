package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/msggate/msggate/internal/fanout"
)

// FanOut: msggate fanout [-devices N] [-instances 1|2] [-messages M] [-interval D] [-settle D] [-dir D]
// It connects N devices, one per member of an N-member group, over WebSocket to K gateway
// processes, sends M messages to the group and prints a table of what each message cost in
// Redis, how long the devices waited for it and what each idle device holds in the gateway
// (internal/fanout).
func FanOut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := fanout.Options{Out: stdout}
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.Devices, "devices", fanout.DefaultDevices, "devices, each of one member of the group (the group's size)")
	fs.IntVar(&o.Instances, "instances", fanout.DefaultInstances, "gateway processes the devices are spread over")
	fs.IntVar(&o.Messages, "messages", fanout.DefaultMessages, "messages sent to the group")
	fs.DurationVar(&o.Interval, "interval", fanout.DefaultInterval, "time between two sends")
	fs.DurationVar(&o.Settle, "settle", fanout.DefaultSettle, "idle time after the last subscription before the gateways' memory is read")
	fs.StringVar(&o.Dir, "dir", "", "directory for the run's processes and logs (default: a new temporary one, removed after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("fanout: unexpected arguments %q", fs.Args())
	}
	_, err := fanout.Run(ctx, o)
	return err
}
