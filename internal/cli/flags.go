package cli

import "flag"

// parseFlags parses args with fs, taking flags wherever they stand among the positional
// arguments: an operator writes `msggate import FILE -data-dir D` as readily as the flags
// first, and flag.Parse stops at FILE, which left -data-dir unread. After "--" every argument
// is positional. The positional arguments, in order, are then fs.Args().
func parseFlags(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parsing "--" alone leaves exactly the positional arguments as fs.Args().
	return fs.Parse(append([]string{"--"}, positional...))
}
