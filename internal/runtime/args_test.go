package runtime

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		name string
		argv []string
		env  map[string]string
		want Args
	}{
		{"command only", []string{"python", "train.py"}, nil, Args{Command: []string{"python", "train.py"}}},
		{"dashdash", []string{"--", "-weird", "x"}, nil, Args{Command: []string{"-weird", "x"}}},
		{"flags stop at the command", []string{"-s", "sh", "-c", "exit 3"}, nil, Args{Subreaper: true, Command: []string{"sh", "-c", "exit 3"}}},
		{"combined", []string{"-sgvvw", "--", "x"}, nil, Args{Subreaper: true, ProcessGroup: true, Verbosity: 2, WarnReap: true, Command: []string{"x"}}},
		{"-e separate and joined", []string{"-e", "3", "-e143", "x"}, nil, Args{RemapExit: []int{3, 143}, Command: []string{"x"}}},
		{"-p name", []string{"-p", "SIGKILL", "x"}, nil, Args{ParentDeath: syscall.SIGKILL, Command: []string{"x"}}},
		{"-p bare name and rt", []string{"-pUSR1", "-p", "SIGRTMIN+3", "x"}, nil, Args{ParentDeath: 37, Command: []string{"x"}}},
		{"grace period", []string{"--grace-period", "30s", "--", "x"}, nil, Args{GracePeriod: 30 * time.Second, GracePeriodSet: true, Command: []string{"x"}}},
		{"grace period =", []string{"--grace-period=0", "x"}, nil, Args{GracePeriodSet: true, Command: []string{"x"}}},
		{"version", []string{"--version"}, nil, Args{Version: true, Command: []string{}}},
		{"help", []string{"-h"}, nil, Args{Help: true, Command: []string{}}},
		// No command: the services run alone, or main says ErrNoCommand.
		{"no command", []string{}, nil, Args{Command: []string{}}},
		{"no command after --", []string{"-s", "--"}, nil, Args{Subreaper: true, Command: []string{}}},
		{"doctor", []string{"doctor", "-o", "json"}, nil, Args{Doctor: true, DoctorArgs: []string{"-o", "json"}}},
		{"doctor after -- is a command", []string{"--", "doctor"}, nil, Args{Command: []string{"doctor"}}},
		{"tini variables, even empty", []string{"x"}, map[string]string{EnvTiniSubreaper: "", EnvTiniKillProcessGroup: "1"}, Args{Subreaper: true, ProcessGroup: true, Command: []string{"x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := none
			if tc.env != nil {
				lookup = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			}
			got, err := ParseArgs(tc.argv, lookup)
			if err != nil {
				t.Fatalf("ParseArgs(%q) = %v", tc.argv, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseArgs(%q) (-want +got):\n%s", tc.argv, diff)
			}
		})
	}
}

func TestParseArgsUsageErrors(t *testing.T) {
	for _, argv := range [][]string{
		{"-x", "sh"},
		{"-g", "-z", "sh"},
		{"--bogus", "sh"},
		{"-e", "256", "sh"},
		{"-e", "three", "sh"},
		{"-e"},
		{"-p", "SIGNOPE", "sh"},
		{"-p", "65", "sh"},
		{"--grace-period", "soon", "sh"},
		{"--grace-period"},
	} {
		_, err := ParseArgs(argv, func(string) (string, bool) { return "", false })
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("ParseArgs(%q) = %v, want a usage error", argv, err)
		}
	}
}

func TestExitCodeRemap(t *testing.T) {
	a := Args{RemapExit: []int{3, 143}}
	for in, want := range map[int]int{0: 0, 3: 0, 4: 4, 143: 0, 137: 137} {
		if got := a.ExitCode(in); got != want {
			t.Errorf("ExitCode(%d) with -e 3 -e 143 = %d, want %d", in, got, want)
		}
	}
}

func TestForwardedSignals(t *testing.T) {
	fwd := map[syscall.Signal]bool{}
	for _, s := range ForwardedSignals() {
		fwd[s] = true
	}
	// What tini's users rely on, the faults sent by kill(2) and systemd's
	// SIGRTMIN+3 included.
	for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP,
		syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
		syscall.SIGALRM, syscall.SIGTERM, syscall.SIGSTKFLT, syscall.SIGCONT, syscall.SIGTSTP, syscall.SIGXCPU, syscall.SIGXFSZ,
		syscall.SIGVTALRM, syscall.SIGWINCH, syscall.SIGIO, syscall.SIGPWR, syscall.SIGSYS, 35, 37, 50, 64} {
		if !fwd[s] {
			t.Errorf("%s (%d) is not forwarded", SignalName(s), s)
		}
	}
	not := NotForwardedSignals()
	if len(fwd)+len(not) != 64 {
		t.Errorf("%d forwarded + %d not = %d, want every signal 1-64 accounted for", len(fwd), len(not), len(fwd)+len(not))
	}
	for s, why := range not {
		if fwd[s] || why == "" {
			t.Errorf("%s: forwarded %v, reason %q", SignalName(s), fwd[s], why)
		}
	}
}

func TestSignalNames(t *testing.T) {
	for s, want := range map[syscall.Signal]string{15: "SIGTERM", 11: "SIGSEGV", 34: "SIGRTMIN", 37: "SIGRTMIN+3", 64: "SIGRTMIN+30", 32: "signal 32"} {
		if got := SignalName(s); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", s, got, want)
		}
		if s == 32 {
			continue
		}
		if got, err := ParseSignal(want); err != nil || got != s {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d", want, got, err, s)
		}
	}
	for in, want := range map[string]syscall.Signal{"kill": 9, "9": 9, "SIGRTMAX": 64, "SIGRTMAX-1": 63, "rtmin+3": 37} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
