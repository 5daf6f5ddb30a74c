package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables tini reads, read the same way here: set at all
// (even empty) means on.
const (
	EnvTiniSubreaper        = "TINI_SUBREAPER"
	EnvTiniKillProcessGroup = "TINI_KILL_PROCESS_GROUP"
)

// Args is the init's command line, tini's flags included:
//
//	imagectl-init [-s] [-g] [-v] [-w] [-e CODE]... [-p SIGNAL] [--grace-period D] [--] COMMAND [ARG...]
//	imagectl-init --version | -h | --help
//	imagectl-init doctor [--output json]
//
// Flags end at the first argument that does not start with "-" (like tini's
// getopt "+"), or after "--".
type Args struct {
	// Command is the command to run and its arguments.
	Command []string
	// Subreaper is -s or TINI_SUBREAPER: registering as a child subreaper
	// when not PID 1 must succeed (the init always tries; without -s a
	// failure is a warning).
	Subreaper bool
	// ProcessGroup is -g or TINI_KILL_PROCESS_GROUP: forwarded signals go to
	// the command's whole process group, not only to the command.
	ProcessGroup bool
	// Verbosity counts -v: 1 or more logs every step (like IMAGECTL_INIT_DEBUG).
	Verbosity int
	// WarnReap is -w: a warning for every zombie reaped that is not the command.
	WarnReap bool
	// RemapExit are the -e codes: the command exiting with one of them makes
	// the init exit 0. 128+n (killed by signal n) can be remapped too.
	RemapExit []int
	// ParentDeath is -p: the signal the init gets when its parent dies
	// (prctl PR_SET_PDEATHSIG); it is forwarded like any other. 0: none.
	ParentDeath syscall.Signal
	// GracePeriod is --grace-period: after a forwarded SIGTERM or SIGINT,
	// kill the command's process group this long later. Set only when
	// GracePeriodSet; it overrides the runtime config's grace_period.
	GracePeriod    time.Duration
	GracePeriodSet bool
	// Version is --version, Help is -h or --help.
	Version, Help bool
	// Doctor is set when the first argument is "doctor"; DoctorArgs follow it.
	Doctor     bool
	DoctorArgs []string
}

// UsageError is a bad command line (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ParseArgs reads the init's arguments (without the program name) and
// tini's environment variables through lookup (os.LookupEnv). An unknown
// flag is a *UsageError, never taken for the command's name.
func ParseArgs(argv []string, lookup func(string) (string, bool)) (Args, error) {
	var a Args
	if _, ok := lookup(EnvTiniSubreaper); ok {
		a.Subreaper = true
	}
	if _, ok := lookup(EnvTiniKillProcessGroup); ok {
		a.ProcessGroup = true
	}
	if len(argv) > 0 && argv[0] == "doctor" {
		a.Doctor, a.DoctorArgs = true, argv[1:]
		return a, nil
	}
	usage := func(format string, args ...any) (Args, error) {
		return a, &UsageError{Msg: fmt.Sprintf(format, args...)}
	}
	i := 0
	for ; i < len(argv); i++ {
		arg := argv[i]
		if arg == "--" {
			i++
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			break
		}
		if strings.HasPrefix(arg, "--") {
			name, val, hasVal := strings.Cut(arg[2:], "=")
			switch name {
			case "version":
				a.Version = true
			case "help":
				a.Help = true
			case "grace-period":
				if !hasVal {
					if i+1 >= len(argv) {
						return usage("--grace-period needs a duration, like --grace-period=30s")
					}
					i++
					val = argv[i]
				}
				d, err := time.ParseDuration(val)
				if err != nil || d < 0 {
					return usage("--grace-period %q: want a duration like 30s (0 turns the kill off)", val)
				}
				a.GracePeriod, a.GracePeriodSet = d, true
			default:
				return usage("unknown flag --%s", name)
			}
			continue
		}
		// Short flags, combinable like getopt's: -sg, -vvv, -e3 or -e 3.
		for j := 1; j < len(arg); j++ {
			switch c := arg[j]; c {
			case 's':
				a.Subreaper = true
			case 'g':
				a.ProcessGroup = true
			case 'v':
				a.Verbosity++
			case 'w':
				a.WarnReap = true
			case 'h':
				a.Help = true
			case 'e', 'p':
				val := arg[j+1:]
				if val == "" {
					if i+1 >= len(argv) {
						return usage("-%c needs a value", c)
					}
					i++
					val = argv[i]
				}
				if c == 'e' {
					n, err := strconv.Atoi(val)
					if err != nil || n < 0 || n > 255 {
						return usage("-e %q: want an exit code from 0 to 255", val)
					}
					a.RemapExit = append(a.RemapExit, n)
				} else {
					sig, err := ParseSignal(val)
					if err != nil {
						return usage("-p: %v", err)
					}
					a.ParentDeath = sig
				}
				j = len(arg)
			default:
				return usage("unknown flag -%c", c)
			}
		}
	}
	a.Command = argv[i:]
	return a, nil
}

// ErrNoCommand is the usage error of a start with no command when the
// runtime config declares no service to run alone.
var ErrNoCommand error = &UsageError{Msg: "no command given (and the runtime config declares no service to run alone)"}

// ExitCode is the init's exit code for the command's code: 0 when -e named
// it, the command's own otherwise.
func (a Args) ExitCode(code int) int {
	for _, c := range a.RemapExit {
		if c == code {
			return 0
		}
	}
	return code
}
