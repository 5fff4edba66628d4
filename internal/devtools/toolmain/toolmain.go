// Package toolmain is the main function the developer tools under cmd/ share: it runs a tool
// with the process's arguments and output until the tool ends or a signal stops it, and turns
// its error into the exit status.
package toolmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Run runs the tool called name and exits with its status: 0 after -h, 1 after an error,
// which goes to stderr after the tool's name. The first SIGINT or SIGTERM cancels run's
// context, so the tool can stop what it started; a second one kills at once.
func Run(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
