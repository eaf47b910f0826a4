package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// dlqIO is what a dlq subcommand reads and writes.
type dlqIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// terminal reports whether stdin is a terminal a person answers on.
	terminal bool
	// progress reports whether stderr is a terminal to show progress on.
	progress bool
}

const dlqUsage = `usage: streamgen dlq COMMAND [flags] QUEUE
       streamgen dlq COMMAND -dir DIR [flags]
       streamgen dlq keep -bind ADDR -dir DIR

Work with the dead letters of a RabbitMQ dead-letter queue, or of the
directory DIR a ZeroMQ keeper writes.

Commands:
  ls       list the letters by group: count, types, source, oldest, newest, reason
  show     show each selected letter: explanation, properties, headers, body
  replay   publish the selected letters again, to their source or -to QUEUE
  purge    remove the selected letters
  export   write the selected letters as JSON Lines (-o FILE, default stdout)
  import   put letters written by export back into QUEUE (-i FILE, default stdin)
  keep     keep the dead letters ZeroMQ services push to ADDR in DIR
  serve    the dead-letter console in the browser, for QUEUE... or -dir DIR (see serve -h)

Run streamgen dlq COMMAND -h for the flags of a command.
Reading never changes the queue: letters keep their order and are not
counted against a delivery limit.
`

// runDLQ runs streamgen dlq with args (after "dlq") and returns the exit
// status: 0, 1 for an error, 2 for bad usage.
func runDLQ(ctx context.Context, args []string, io dlqIO) int {
	if len(args) == 0 {
		fmt.Fprint(io.stderr, dlqUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(io.stdout, dlqUsage)
		return 0
	}
	if args[0] == "serve" {
		return runDLQServe(ctx, args[1:], io)
	}
	cmd, ok := dlqCommands[args[0]]
	if !ok {
		fmt.Fprintf(io.stderr, "streamgen dlq: unknown command %q\n\n%s", args[0], dlqUsage)
		return 2
	}
	c := &dlqCommand{name: args[0], io: io}
	fs := c.flags(cmd)
	queue, status := c.parse(fs, args[1:])
	if status >= 0 {
		return status
	}
	var q deadletter.Store
	if c.dir != "" {
		// Only the keeper and import make the directory: for the others,
		// a directory that is not there is a mistyped path.
		open := zeromq.OpenDeadLetterDir
		if c.name == "keep" || c.name == "import" {
			open = zeromq.CreateDeadLetterDir
		}
		d, err := open(c.dir)
		if err != nil {
			fmt.Fprintf(io.stderr, "streamgen dlq %s: %s\n", c.name, c.redact(err))
			return 1
		}
		q = d
	} else if cmd.run != nil {
		dq, err := rabbitmq.DialDeadLetterQueue(ctx, c.url, queue)
		if err != nil {
			fmt.Fprintf(io.stderr, "streamgen dlq %s: %s: %s\n", c.name, c.redact(err), connectHint(err))
			return 1
		}
		q = dq
	}
	defer func() { _ = q.Close() }()
	if c.name != "show" && c.name != "keep" {
		var done func()
		ctx, done = c.withProgress(ctx, q.Name())
		c.clearProgress = done
		defer done()
	}
	run := cmd.run
	if run == nil {
		run = func(ctx context.Context, c *dlqCommand, _ deadletter.Store) error {
			return cmd.runDir(ctx, c, q.(*zeromq.DeadLetterDir))
		}
	}
	if err := run(ctx, c, q); err != nil {
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintf(io.stderr, "streamgen dlq %s: %s\n", c.name, u.msg)
			return 2
		}
		fmt.Fprintf(io.stderr, "streamgen dlq %s: %s\n", c.name, c.redact(err))
		return 1
	}
	return 0
}

// usageError is a misuse found after the flags were parsed.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// redact returns err's text without the package prefix (the line has the
// command's) and with the -url's password masked, wherever it appears.
func (c *dlqCommand) redact(err error) string {
	msg := packagePrefixes.Replace(err.Error())
	if c.url != "" {
		msg = strings.ReplaceAll(msg, c.url, rabbitmq.RedactURL(c.url))
	}
	return msg
}

// dlqSpec describes one subcommand.
type dlqSpec struct {
	summary   string
	selection bool // takes the selection flags
	flags     func(c *dlqCommand, fs *flag.FlagSet)
	run       func(ctx context.Context, c *dlqCommand, q deadletter.Store) error
	// runDir, for a command of a keeper's directory only (keep), runs
	// instead of run.
	runDir func(ctx context.Context, c *dlqCommand, d *zeromq.DeadLetterDir) error
}

var dlqCommands = map[string]dlqSpec{
	"ls": {summary: "list the letters of QUEUE by group", flags: func(c *dlqCommand, fs *flag.FlagSet) {
		fs.BoolVar(&c.json, "json", false, "write the groups as a JSON array")
	}, run: dlqLs},
	"show": {summary: "show each selected letter of QUEUE", selection: true, flags: func(c *dlqCommand, fs *flag.FlagSet) {
		fs.BoolVar(&c.json, "json", false, "write the letters as JSON Lines, as export does")
	}, run: dlqShow},
	"replay": {summary: "publish the selected letters of QUEUE again, as new deliveries with a fresh attempt budget; each leaves QUEUE once the broker confirmed it", selection: true, flags: func(c *dlqCommand, fs *flag.FlagSet) {
		fs.StringVar(&c.to.Queue, "to", "", "replay to `queue` instead of each letter's source queue; with -dir, the address (tcp://host:port) to push to, where the source queue is bound")
		fs.StringVar(&c.to.Exchange, "exchange", "", "replay through `exchange` (with -routing-key) instead")
		fs.StringVar(&c.to.RoutingKey, "routing-key", "", "the routing `key` for -exchange")
		fs.Float64Var(&c.rate, "rate", 0, "publish at most `n` letters a second (0: no limit)")
		c.confirmFlags(fs)
	}, run: dlqReplay},
	"purge": {summary: "remove the selected letters of QUEUE for good (all of them without a selection)", selection: true, flags: func(c *dlqCommand, fs *flag.FlagSet) {
		c.confirmFlags(fs)
	}, run: dlqPurge},
	"export": {summary: "write the selected letters of QUEUE as JSON Lines; QUEUE is left as it was", selection: true, flags: func(c *dlqCommand, fs *flag.FlagSet) {
		fs.StringVar(&c.file, "o", "", "write to `file` instead of standard output")
	}, run: dlqExport},
	"import": {summary: "put letters that export wrote back into QUEUE, as they were parked", flags: func(c *dlqCommand, fs *flag.FlagSet) {
		fs.StringVar(&c.file, "i", "", "read `file` instead of standard input")
	}, run: dlqImport},
	"keep": {summary: "bind ADDR as a PULL, where ZeroMQ services push their dead letters, and write each letter to DIR, fsync'd, before reading the next; until interrupted", flags: func(c *dlqCommand, fs *flag.FlagSet) {
		fs.StringVar(&c.bind, "bind", "", "the `address` to bind (tcp://host:port): the address of the services' dead_letter queue")
	}, runDir: dlqKeep},
}

// dlqCommand holds a subcommand's flags.
type dlqCommand struct {
	name string
	io   dlqIO

	url           string
	sel           deadletter.Selection
	types, ids    multiFlag
	before, after string
	json          bool
	to            deadletter.Target
	rate          float64
	dryRun, yes   bool
	asks          bool // replay and purge ask before they act, unless -yes
	file          string
	dir, bind     string
	// clearProgress clears the progress line, if one shows.
	clearProgress func()
}

func (c *dlqCommand) clear() {
	if c.clearProgress != nil {
		c.clearProgress()
	}
}

func (c *dlqCommand) confirmFlags(fs *flag.FlagSet) {
	c.asks = true
	fs.BoolVar(&c.dryRun, "dry-run", false, "only say what would be done")
	fs.BoolVar(&c.yes, "yes", false, "do not ask (needed when standard input is not a terminal)")
}

// multiFlag is a flag that may be given several times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func (c *dlqCommand) flags(spec dlqSpec) *flag.FlagSet {
	fs := flag.NewFlagSet("streamgen dlq "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The default is resolved after parsing, so that -h never prints a
	// password the environment holds.
	if spec.run != nil {
		fs.StringVar(&c.url, "url", "", "the RabbitMQ `URL` (default $"+brokerurl.EnvVar+", else "+rabbitmq.RedactURL(brokerurl.DefaultRabbitMQ)+")")
	}
	fs.StringVar(&c.dir, "dir", "", "work on the `directory` a ZeroMQ keeper writes (streamgen dlq keep), instead of a RabbitMQ QUEUE")
	if spec.selection {
		fs.StringVar(&c.sel.Group, "group", "", "select the letters of group `key` (the GROUP column of ls)")
		fs.StringVar(&c.sel.Reason, "reason", "", "select letters whose reason contains `text` (any case)")
		fs.Var(&c.types, "type", "select letters of message `type` (repeatable)")
		fs.Var(&c.ids, "id", "select the letter with message `id` (repeatable)")
		fs.StringVar(&c.before, "before", "", "select letters parked before `time` (RFC 3339, 2006-01-02, or a duration ago such as 2h)")
		fs.StringVar(&c.after, "after", "", "select letters parked after `time` (as -before)")
		fs.IntVar(&c.sel.Limit, "limit", 0, "act on at most `n` letters (0: no limit)")
	}
	spec.flags(c, fs)
	return fs
}

// parse parses args, flags before and after QUEUE, and returns QUEUE, or
// an exit status (>= 0) when the command is done.
func (c *dlqCommand) parse(fs *flag.FlagSet, args []string) (string, int) {
	usage := func(w io.Writer) {
		form := "[flags] QUEUE\n       streamgen dlq " + c.name + " -dir DIR [flags]"
		if c.name == "keep" {
			form = "-bind ADDR -dir DIR"
		}
		fmt.Fprintf(w, "usage: streamgen dlq %s %s\n\n%s.\n\nFlags:\n", c.name, form, dlqCommands[c.name].summary)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(c.io.stdout)
				return "", 0
			}
			fmt.Fprintf(c.io.stderr, "streamgen dlq %s: %v\n", c.name, err)
			usage(c.io.stderr)
			return "", 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case c.name == "keep" && (c.dir == "" || c.bind == "" || len(positional) > 0):
		fmt.Fprintf(c.io.stderr, "streamgen dlq keep: give -bind ADDR and -dir DIR, and no QUEUE\n")
		usage(c.io.stderr)
		return "", 2
	case c.dir != "" && len(positional) > 0:
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: give QUEUE or -dir DIR, not both\n", c.name)
		usage(c.io.stderr)
		return "", 2
	case c.dir == "" && len(positional) != 1:
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: give one QUEUE, the dead-letter queue, or -dir DIR (got %d)\n", c.name, len(positional))
		usage(c.io.stderr)
		return "", 2
	}
	if c.dir != "" {
		if c.to.Exchange != "" {
			fmt.Fprintf(c.io.stderr, "streamgen dlq %s: a keeper's letters go to an address (-to tcp://host:port), not to an exchange\n", c.name)
			return "", 2
		}
		c.to.Address, c.to.Queue = c.to.Queue, ""
		if c.name == "replay" && c.to.Address == "" {
			fmt.Fprintf(c.io.stderr, "streamgen dlq replay: with -dir, give -to ADDR: the address (tcp://host:port) the source queue is bound at\n")
			return "", 2
		}
	}
	if len(positional) == 0 {
		positional = []string{""}
	}
	if c.url == "" {
		c.url = brokerurl.RabbitMQ()
	}
	c.sel.Types, c.sel.IDs = c.types, c.ids
	var err error
	now := time.Now()
	if c.sel.Before, err = parseWhen(c.before, now); err != nil {
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: -before: %v\n", c.name, err)
		return "", 2
	}
	if c.sel.After, err = parseWhen(c.after, now); err != nil {
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: -after: %v\n", c.name, err)
		return "", 2
	}
	if c.sel.Limit < 0 || c.rate < 0 {
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: -limit and -rate cannot be negative\n", c.name)
		return "", 2
	}
	if c.to.Queue != "" && c.to.Exchange != "" || c.to.RoutingKey != "" && c.to.Exchange == "" {
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: give -to QUEUE, or -exchange with -routing-key, not both\n", c.name)
		return "", 2
	}
	// Asked before anything is read or changed: without a terminal there is
	// no one to answer.
	if c.asks && !c.yes && !c.dryRun && !c.io.terminal {
		fmt.Fprintf(c.io.stderr, "streamgen dlq %s: standard input is not a terminal to ask on: give -yes to %s without asking, or -dry-run to see what it would do\n", c.name, c.name)
		return "", 2
	}
	return positional[0], -1
}

// parseWhen reads a time for -before and -after.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: write 2026-01-02T15:04:05Z, 2026-01-02, or a duration ago such as 90m", s)
}

// withProgress returns ctx with a progress line on stderr, when that is a
// terminal: how many letters of store name an operation read, every 1,000;
// done clears the line.
func (c *dlqCommand) withProgress(ctx context.Context, name string) (_ context.Context, done func()) {
	if !c.io.progress {
		return ctx, func() {}
	}
	shown := false
	ctx = deadletter.WithProgress(ctx, func(n int) {
		if n%1000 == 0 {
			shown = true
			fmt.Fprintf(c.io.stderr, "\rread %s of %s", deadletter.Letters(n), name)
		}
	})
	return ctx, func() {
		if shown {
			fmt.Fprint(c.io.stderr, "\r\033[K") // the progress line goes
			shown = false
		}
	}
}

func dlqKeep(ctx context.Context, c *dlqCommand, d *zeromq.DeadLetterDir) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(c.io.stderr, nil))
	k := &zeromq.Keeper{Bind: c.bind, Dir: d, Logger: log}
	return k.Run(ctx)
}

func dlqLs(ctx context.Context, c *dlqCommand, q deadletter.Store) error {
	groups, err := q.Groups(ctx)
	c.clear()
	if errors.Is(err, deadletter.ErrBusy) {
		// Another operation reads the queue: say what the queue counts
		// beside the letters it holds, never that there are none.
		if n, lerr := q.Len(ctx); lerr == nil {
			return fmt.Errorf("%w; the queue counts %s beside those it holds", err, deadletter.Letters(n))
		}
	}
	if err != nil {
		return err
	}
	listed := 0
	for _, g := range groups {
		listed += g.Count
	}
	// A replay or listing under way holds letters the listing does not
	// see: say so, never that the queue holds no letters.
	readers, err := deadletter.Holders(ctx, q)
	if err != nil {
		return err
	}
	held := ""
	if readers > 0 {
		who := "another reader"
		if readers > 1 {
			who = fmt.Sprintf("%d other readers", readers)
		}
		held = fmt.Sprintf("%s listed; more are held by %s (a replay or listing under way): run ls again when it ends", deadletter.Letters(listed), who)
		if listed == 0 {
			held = fmt.Sprintf("no letter listed: the letters of %s are held by %s (a replay or listing under way): run ls again when it ends", q.Name(), who)
		}
	}
	if c.json {
		enc := json.NewEncoder(c.io.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(groups); err != nil {
			return err
		}
		if held != "" {
			fmt.Fprintln(c.io.stderr, held)
		}
		return nil
	}
	if len(groups) == 0 && held == "" {
		fmt.Fprintf(c.io.stdout, "%s holds no letters\n", q.Name())
		return nil
	}
	if len(groups) > 0 {
		if err := deadletter.WriteGroups(c.io.stdout, groups); err != nil {
			return err
		}
	}
	if held != "" {
		fmt.Fprintln(c.io.stdout, held)
	}
	return nil
}

func dlqShow(ctx context.Context, c *dlqCommand, q deadletter.Store) error {
	w := bufio.NewWriter(c.io.stdout)
	n := 0
	err := q.Select(ctx, c.sel, func(l *deadletter.Letter) error {
		n++
		if c.json {
			b, err := l.MarshalJSON()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "%s\n", b)
			return err
		}
		if n > 1 {
			fmt.Fprintln(w)
		}
		return deadletter.WriteLetter(w, l)
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err == nil && n == 0 && !c.json {
		fmt.Fprintf(c.io.stderr, "no letter of %s is selected\n", q.Name())
	}
	return err
}

// confirm says what the command will do to n letters and, unless -yes,
// asks on the terminal. It returns false when the answer is no, and an
// error when there is none (end of input): nothing was done.
func (c *dlqCommand) confirm(what, done string) (bool, error) {
	if c.yes {
		return true, nil
	}
	if !c.io.terminal {
		return false, usageError{"standard input is not a terminal to ask on: give -yes to " + c.name + " without asking, or -dry-run to see what it would do"}
	}
	fmt.Fprintf(c.io.stderr, "%s? [y/N] ", what)
	answer, err := bufio.NewReader(c.io.stdin).ReadString('\n')
	if err != nil && strings.TrimSpace(answer) == "" {
		fmt.Fprintln(c.io.stderr)
		return false, fmt.Errorf("no answer: nothing %s; give -yes to skip the question", done)
	}
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes", nil
}

// planned counts what a selection picks, to say so before acting.
func planned(ctx context.Context, c *dlqCommand, q deadletter.Store) (deadletter.Report, error) {
	return q.Purge(ctx, c.sel, true)
}

// proceed plans an operation that changes the queue (verb, past tense
// done) and reports whether to carry it out: not when nothing is
// selected, on a dry run (which says what it would do), or when the
// operator says no. what says what the plan would do.
func proceed(ctx context.Context, c *dlqCommand, q deadletter.Store, verb, done string, what func(deadletter.Report) string) (bool, error) {
	plan, err := planned(ctx, c, q)
	c.clear()
	if err != nil {
		return false, err
	}
	if plan.Selected == 0 {
		fmt.Fprintf(c.io.stdout, "no letter of %s is selected: nothing to %s\n", q.Name(), verb)
		return false, nil
	}
	if c.dryRun {
		fmt.Fprintf(c.io.stdout, "would %s\n", what(plan))
		return false, nil
	}
	ok, err := c.confirm(what(plan), done)
	if err == nil && !ok {
		fmt.Fprintln(c.io.stdout, "nothing "+done)
	}
	return ok && err == nil, err
}

func dlqReplay(ctx context.Context, c *dlqCommand, q deadletter.Store) error {
	if ok, err := proceed(ctx, c, q, "replay", "replayed", func(plan deadletter.Report) string {
		return fmt.Sprintf("replay %s of %s to %s", ofLetters(plan.Selected, plan.Scanned), q.Name(), c.to)
	}); err != nil || !ok {
		return err
	}
	rep, err := q.Replay(ctx, c.sel, deadletter.ReplayOptions{To: c.to, Rate: c.rate})
	c.clear()
	fmt.Fprintf(c.io.stdout, "replayed %s of %s to %s\n", deadletter.Letters(rep.Done), q.Name(), c.to)
	if err != nil {
		return err
	}
	return failures(c, rep, "replayed")
}

// failures reports the letters an operation left, as an error.
func failures(c *dlqCommand, rep deadletter.Report, done string) error {
	if rep.Failed == 0 {
		return nil
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(c.io.stderr, "  %s\n", e)
	}
	if rep.Failed == 1 {
		return fmt.Errorf("1 selected letter was not %s and is still parked", done)
	}
	return fmt.Errorf("%d selected letters were not %s and are still parked", rep.Failed, done)
}

func dlqPurge(ctx context.Context, c *dlqCommand, q deadletter.Store) error {
	if ok, err := proceed(ctx, c, q, "purge", "purged", func(plan deadletter.Report) string {
		return fmt.Sprintf("purge %s of %s for good", ofLetters(plan.Selected, plan.Scanned), q.Name())
	}); err != nil || !ok {
		return err
	}
	rep, err := q.Purge(ctx, c.sel, false)
	c.clear()
	fmt.Fprintf(c.io.stdout, "purged %s of %s\n", deadletter.Letters(rep.Done), q.Name())
	return err
}

func dlqExport(ctx context.Context, c *dlqCommand, q deadletter.Store) error {
	w := c.io.stdout
	if c.file != "" {
		f, err := os.Create(c.file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		w = f
	}
	n, err := q.Export(ctx, w, c.sel)
	c.clear()
	if err != nil {
		return err
	}
	if f, ok := w.(*os.File); ok && c.file != "" {
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.io.stderr, "exported %s of %s\n", deadletter.Letters(n), q.Name())
	return nil
}

func dlqImport(ctx context.Context, c *dlqCommand, q deadletter.Store) error {
	r := c.io.stdin
	if c.file != "" {
		f, err := os.Open(c.file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	n, err := q.Import(ctx, r)
	fmt.Fprintf(c.io.stderr, "imported %s into %s\n", deadletter.Letters(n), q.Name())
	return err
}
